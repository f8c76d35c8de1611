"""Request: what one dispatch (or one stream) was asked to do, besides its calls."""

from __future__ import annotations

from dataclasses import dataclass

from ..tools import ToolRegistry
from ._calls import CompletedListener, Runner, StartedListener
from ._interrupt import InterruptToken

__all__ = ["Request"]


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
