"""toolweave's scheduling inside PydanticAI: `ScheduledToolset`, a wrapper toolset.

PydanticAI runs the function-tool calls of one model response as concurrent
tasks, split into segments by *barriers*: a tool whose `ToolDefinition` says
``sequential=True`` runs alone, with every call before it finished first and
every call after it waiting (toolweave's ``partition`` schedule). It offers no
extension point that sees the whole batch before the calls start: a toolset
sees one call at a time (`call_tool`), from tasks that are already running.

So `ScheduledToolset` schedules through that barrier, failing closed: every
tool that is not declared *provably read-only* (`Concurrency.SAFE` with no
declared writes, constant) is handed to PydanticAI as ``sequential=True``;
PydanticAI's own ``sequential=True`` maps to SEQUENTIAL whatever the
declaration says. Reads between two barriers overlap (reads never conflict
with reads), so the schedule is serial-equivalent like toolweave's
``conflict`` policy, but may be less parallel: a write never overlaps reads of
*other* keys here, and an input-dependent declaration makes the tool a barrier
for every call. Each call then runs through toolweave's `ToolRunner`
lifecycle (hooks, permissions, timeouts, audit) under an optional
`max_concurrency` cap, and results reach the model in call order (PydanticAI
records them by position).

Errors: by default (``on_error="raise"``) a tool's exception propagates as
PydanticAI would let it (the run aborts). ``on_error="fail"`` answers it with
`ToolFailed` (the model sees a failed result; no retry budget used),
``on_error="retry"`` with `ModelRetry` (counts against the tool's retries).
PydanticAI's own signals (`ModelRetry`, `ToolFailed`, `CallDeferred`,
`ApprovalRequired`, ...) always pass through unchanged. A call toolweave
itself refuses (permission denied, timeout, interrupted) is answered with
`ToolFailed`.

Requires ``toolweave[pydantic-ai]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio

from . import _needs_pydantic_ai  # noqa: F401  first: a missing framework names its extra

# isort: split
from pydantic_ai import RunContext
from pydantic_ai.exceptions import (
    AgentRunError,
    ApprovalRequired,
    CallDeferred,
    ModelRetry,
    SkipToolExecution,
    SkipToolValidation,
    ToolFailed,
    ToolFailedError,
    ToolRetryError,
    UserError,
)
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from ..scheduling import InterruptToken
from ..tools import Access, Concurrency
from ._declaration import UNDECLARED, Declaration, Declarations, checked_declarations
from ._foreign import ForeignCall, ForeignScheduler

__all__ = ["Declaration", "ErrorMode", "ScheduledToolset", "is_read_only"]

ErrorMode = Literal["raise", "fail", "retry"]
"""What a tool's exception becomes: itself (the run aborts), `ToolFailed`, `ModelRetry`."""

_SIGNALS: tuple[type[BaseException], ...] = (
    ModelRetry,
    ToolFailed,
    CallDeferred,
    ApprovalRequired,
    SkipToolExecution,
    SkipToolValidation,
    # what a nested ToolManager.handle_call inside a tool raises, already counted
    ToolRetryError,
    ToolFailedError,
    AgentRunError,  # usage limits, model errors, cancelled sub-agent runs
    UserError,  # a misconfiguration, not a tool failure
)
"""PydanticAI's control flow: never turned into a failed or retried answer."""


def is_read_only(declaration: Declaration) -> bool:
    """True if every call of the tool is SAFE and writes nothing, whatever its input."""
    access = declaration.access
    return declaration.concurrency is Concurrency.SAFE and (
        access is None or (isinstance(access, Access) and not access.writes)
    )


def _describe(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


@dataclass(slots=True)
class _Cap:
    """The `max_concurrency` limiter, shared by the per-run copies PydanticAI makes."""

    limit: int | None
    limiter: anyio.CapacityLimiter | None = None

    def get(self) -> anyio.CapacityLimiter | None:
        if self.limit is not None and self.limiter is None:
            self.limiter = anyio.CapacityLimiter(self.limit)
        return self.limiter


@dataclass
class ScheduledToolset(WrapperToolset[Any]):
    """Wraps a toolset so its calls follow toolweave's declarations and lifecycle.

    Args:
        wrapped: The toolset whose tools are scheduled (e.g. a `FunctionToolset`).
        declarations: Tool name → `Declaration`. Undeclared = SEQUENTIAL.
        on_error: ``"raise"`` (PydanticAI's default), ``"fail"`` or ``"retry"``.
        max_concurrency: At most this many of the toolset's calls run at once
            (across runs sharing the toolset); None = no cap of ours.
        interrupt: When set, calls not started yet are answered "not run:
            interrupted", running CANCEL calls are stopped, BLOCK calls finish;
            each such call is answered with `ToolFailed`. One token per run: pass
            a fresh toolset to ``agent.run(..., toolsets=[...])``.
        scheduler_options: ``hooks``, ``permissions``, ``mode``, ``on_event``,
            ``audit`` for the `ToolRunner`.

    Loop affinity: asyncio, the agent's event loop.
    """

    declarations: Declarations = field(default_factory=dict, kw_only=True)
    on_error: ErrorMode = field(default="raise", kw_only=True)
    max_concurrency: int | None = field(default=None, kw_only=True)
    interrupt: InterruptToken | None = field(default=None, kw_only=True)
    scheduler_options: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    _cap: _Cap = field(default_factory=lambda: _Cap(None), kw_only=True, repr=False)
    _scheduler: ForeignScheduler = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.on_error not in ("raise", "fail", "retry"):
            raise ValueError(
                f"on_error must be raise, fail or retry, not {self.on_error!r}"
            )
        if self._cap.limit is None and self.max_concurrency is not None:
            self._cap = _Cap(self.max_concurrency)
        self._scheduler = ForeignScheduler(
            checked_declarations(self.declarations), **self.scheduler_options
        )

    @property
    def tool_name_conflict_hint(self) -> str:
        """The wrapped toolset's hint, e.g. a `PrefixedToolset`'s "Change the `prefix`"."""
        return self.wrapped.tool_name_conflict_hint

    def declaration(self, name: str, tool: ToolsetTool[Any]) -> Declaration:
        """What calls of `name` are scheduled by; PydanticAI's ``sequential=True`` wins."""
        declared = self.declarations.get(name, UNDECLARED)
        if (
            tool.tool_def.sequential
            and declared.concurrency is not Concurrency.SEQUENTIAL
        ):
            return replace(declared, concurrency=Concurrency.SEQUENTIAL)
        return declared

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The wrapped tools, each not provably read-only marked ``sequential=True``."""
        tools = await self.wrapped.get_tools(ctx)
        scheduled: dict[str, ToolsetTool[Any]] = {}
        for name, tool in tools.items():
            barrier = not is_read_only(self.declaration(name, tool))
            if barrier and not tool.tool_def.sequential:
                tool = replace(tool, tool_def=replace(tool.tool_def, sequential=True))
            scheduled[name] = tool
        return scheduled

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
    ) -> Any:
        """Run one call through toolweave's lifecycle, then the wrapped toolset."""
        limiter = self._cap.get()
        if limiter is None:
            return await self._run(name, tool_args, ctx, tool)
        async with limiter:
            return await self._run(name, tool_args, ctx, tool)

    async def _run(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[Any],
        tool: ToolsetTool[Any],
    ) -> Any:
        async def invoke(index: int, args: Mapping[str, Any]) -> Any:
            del index
            return await self.wrapped.call_tool(name, dict(args), ctx, tool)

        passthrough = (Exception,) if self.on_error == "raise" else _SIGNALS
        call = ForeignCall(ctx.tool_call_id or "", name, tool_args)
        [outcome] = await self._scheduler.run(
            [call], invoke, _describe, passthrough=passthrough, interrupt=self.interrupt
        )
        if outcome.ran:
            return outcome.value
        message = outcome.result.text
        if self.on_error == "retry" and not outcome.result.synthetic:
            raise ModelRetry(message)
        raise ToolFailed(message)
