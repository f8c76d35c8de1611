"""RunnerOptions: what a `ToolRunner` does around each tool, as one frozen record.

`ToolRunner(registry, state=..., options=RunnerOptions(...))` takes the
record; the same fields are also taken as keywords (`RunnerKeywords`,
``ToolRunner(registry, state=..., hooks=..., audit="warn")``), the spelling
every caller used before the record existed, typed field by field.
`LifecycleKeywords` is the part an integration passes on (its scheduler has a
`config` of its own and runs every tool without the lifecycle's timeout).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias, TypedDict, final

from ..events import Event
from ..messages import ToolCall
from ..scheduling import InterruptToken
from ._audit import AuditMode
from ._authorize import AskHandler
from ._config import ExecutionConfig
from ._decision import PermissionMode
from ._hooks import Hooks
from ._rules import PermissionRules
from ._run_deadline import RunDeadline
from ._suspend import SuspendPoint

_DEFAULT_CONFIG = ExecutionConfig()

__all__ = ["LifecycleKeywords", "RunnerKeywords", "RunnerOptions", "StartBarrier"]

StartBarrier: TypeAlias = Callable[[ToolCall], Awaitable[str | None]]
"""Awaited right before a call's tool starts: None to start it, or why it must not.

The seam a session recorder uses to make a call's start durable before its code
runs (write-ahead), so "not started" in the record is true by construction.
"""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerOptions:
    """The stages a `ToolRunner` runs around each tool; every default does nothing.

    The runner's own docstring says what each stage does and when.
    """

    config: ExecutionConfig = _DEFAULT_CONFIG
    """Timeouts and result budgets."""
    hooks: Hooks | None = None
    """PreToolUse / PostToolUse / PostToolUseFailure hooks (may be added to later)."""
    permissions: PermissionRules | None = None
    """Allow / deny / ask rules."""
    mode: PermissionMode = PermissionMode.DEFAULT
    """The permission mode at the start (`ToolRunner.mode` changes it later)."""
    ask: AskHandler | None = None
    """Answers an "ask" decision; None = deny."""
    on_event: Callable[[Event], None] | None = None
    """Gets `ToolRunning`, `ToolProgress`, warnings, permission and audit events."""
    audit: AuditMode = "off"
    """The declaration audit's mode."""
    deadline: RunDeadline | None = None
    """A bound on every call (the run's wall-clock budget)."""
    before_start: StartBarrier | None = None
    """Awaited right before each tool starts (a recorder's write-ahead)."""
    interrupt: InterruptToken | None = None
    """The run's halt: once set, a call waiting to be allowed is answered "not run"."""
    suspend: SuspendPoint | None = None
    """The run's suspension state: once a call waits for a person, later calls are held."""


class LifecycleKeywords(TypedDict, total=False):
    """`RunnerOptions`' stage fields as keywords (an integration's scheduler takes these)."""

    hooks: Hooks | None
    permissions: PermissionRules | None
    mode: PermissionMode
    on_event: Callable[[Event], None] | None
    audit: AuditMode


class RunnerKeywords(LifecycleKeywords, total=False):
    """Every `RunnerOptions` field as a keyword of `ToolRunner`."""

    config: ExecutionConfig
    ask: AskHandler | None
    deadline: RunDeadline | None
    before_start: StartBarrier | None
    interrupt: InterruptToken | None
    suspend: SuspendPoint | None
