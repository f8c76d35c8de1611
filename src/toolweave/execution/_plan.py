"""ToolPlan: which stages a runner's calls of one tool go through, decided once.

Whether a stage can act on a call depends on the tool (its timeout, its own
`validate_input` / `check_permissions`, the hooks matching its names) and on
the runner (its timeout default, audit, deadline, permission rules and mode),
never on the call's input. So the choice is made once per tool and cached:
the plain path when no stage could act, else the staged chain with only the
stages that can. The cache forgets every plan when what it was made from
changes: a hook registered later (`Hooks.tool_hook_count`) or a new
permission mode (`PlanCache.clear`, called by `ToolRunner.mode`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from ..tools import Tool
from ._authorize import PermissionGate
from ._config import ExecutionConfig
from ._hooks import (
    Hooks,
    PostToolUseFailureHook,
    PostToolUseHook,
    PreToolUseHook,
)
from ._run_deadline import RunDeadline

__all__ = ["PlanCache", "ToolPlan"]

_MAX_PLANS = 512
"""Plans kept before the cache starts over (a registry whose tools are replaced)."""


@final
@dataclass(frozen=True, slots=True)
class ToolPlan:
    """The stages one tool's calls take under one runner."""

    tool: Tool
    plain: bool
    """No stage can act: no timeout, deadline, audit, hook, validation or permission opinion."""
    timeout: float | None
    """The tool's timeout, else the runner's default (None = none)."""
    admits: bool
    """Validation, PreToolUse hooks or the permission stage must run before the tool."""
    validates: bool
    """The tool has its own `validate_input`."""
    pre: tuple[PreToolUseHook, ...]
    post: tuple[PostToolUseHook, ...]
    failure: tuple[PostToolUseFailureHook, ...]


@final
class PlanCache:
    """Each tool's `ToolPlan` for one runner. Loop affinity: the runner's."""

    __slots__ = (
        "_audited",
        "_config",
        "_deadline",
        "_gate",
        "_hooks",
        "_plans",
        "_seen",
    )

    def __init__(
        self,
        config: ExecutionConfig,
        hooks: Hooks | None,
        gate: PermissionGate,
        *,
        audited: bool,
        deadline: RunDeadline | None,
    ) -> None:
        self._config = config
        self._hooks = hooks
        self._gate = gate
        self._audited = audited
        self._deadline = deadline
        self._plans: dict[Tool, ToolPlan] = {}
        self._seen = 0 if hooks is None else hooks.tool_hook_count

    def clear(self) -> None:
        """Forget every plan (what they were made from changed)."""
        self._plans.clear()

    def of(self, tool: Tool) -> ToolPlan:
        """The plan of `tool`'s calls: cached, or made now."""
        hooks = self._hooks
        if hooks is not None and hooks.tool_hook_count != self._seen:
            self._plans.clear()
            self._seen = hooks.tool_hook_count
        plan = self._plans.get(tool)
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            plan = self._plans[tool] = self._made(tool)
        return plan

    def _made(self, tool: Tool) -> ToolPlan:
        timeout = (
            tool.timeout if tool.timeout is not None else self._config.default_timeout
        )
        hooks, names = self._hooks, (tool.name, *tool.aliases)
        pre = hooks.pre_hooks_for(names) if hooks is not None else ()
        post = hooks.post_hooks_for(names) if hooks is not None else ()
        failure = hooks.failure_hooks_for(names) if hooks is not None else ()
        validates = type(tool).validate_input is not Tool.validate_input
        admits = validates or bool(pre) or not self._gate.allows_at_once(tool, None)
        plain = not (
            admits
            or post
            or failure
            or timeout is not None
            or self._audited
            or self._deadline is not None
        )
        return ToolPlan(tool, plain, timeout, admits, validates, pre, post, failure)
