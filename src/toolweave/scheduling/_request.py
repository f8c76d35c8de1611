"""Request: what one dispatch (or one stream) was asked to do, besides its calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ..messages import ToolCall, ToolResult
from ..tools import Tool, ToolRegistry
from ._calls import CompletedListener, Runner, StartedListener
from ._interrupt import InterruptToken

__all__ = ["Request", "ResolvedRunner"]

ResolvedRunner = Callable[[ToolCall, Tool | None], Awaitable[ToolResult]]
"""``async (call, tool) -> ToolResult``: run `call` as `tool`, with no lookup of its own."""


@dataclass(frozen=True, slots=True)
class Request:
    """The registry, runner, listeners and interrupt of one dispatch, as one value.

    Made once per `Dispatcher.dispatch` or `open_stream` and handed down whole
    to every path that runs the calls (the batch, the one-call path, the
    sequential loop, the close fallback), so each takes one argument for it,
    not five, and none can pass a different runner than the dispatch got.
    """

    registry: ToolRegistry
    """The session's tools (the gate looks calls up here)."""
    runner: Runner
    """``async (call) -> ToolResult``, normally the execution lifecycle."""
    on_started: StartedListener | None = None
    """Called with each call in call order, before it runs."""
    on_completed: CompletedListener | None = None
    """Called with each call and its result as it finishes."""
    interrupt: InterruptToken | None = None
    """When set: CANCEL calls stop, BLOCK calls run on, the rest never start."""
    resolved: ResolvedRunner | None = field(default=None, init=False)
    """The runner's ``run_resolved(call, tool)``, if it has one (`ToolRunner` does).

    The batch classifies each call by the tool its name resolves to; a runner
    that looked the name up again when the call runs could run another tool
    than the one classified (a context modifier re-registered the name in
    between). Given the tool, it runs exactly that one (issue 29, item 4).
    """

    def __post_init__(self) -> None:
        resolved = getattr(self.runner, "run_resolved", None)
        if callable(resolved):
            object.__setattr__(self, "resolved", resolved)

    def runner_for(self, tool: Tool | None) -> Runner:
        """The runner of a call the gate classified as `tool` (None: an unknown name)."""
        resolved = self.resolved
        if resolved is None:
            return self.runner
        return lambda call: resolved(call, tool)
