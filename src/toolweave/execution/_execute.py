"""Running the tool itself: under its timeout, with progress reported at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.from_thread
import anyio.lowlevel

from .._exceptions import StopRun, ToolError
from .._native.cancel import cancelled_from_outside, is_cancellation
from .._native.deadline import DeadlineScope
from .._native.threads import AbandonRecord, abandoning_threads
from .._native.unawaited import not_a_result
from ..events import Event, ToolProgress
from ..tools import Tool, ToolContext
from ._output import ToolOutput

__all__ = [
    "Executed",
    "ProgressReporter",
    "call_tool",
    "emit_safely",
    "execute",
    "failure_of",
    "returned",
]

logger = logging.getLogger("toolweave.execution")

EventSink = Callable[[Event], None]

EFFECTS_UNKNOWN_AFTER_TIMEOUT = (
    " It was stopped mid-way, so whether it took effect (fully, partly or not at"
    " all) is unknown: check before running it again."
)
"""Appended to every timeout answer: a call cut at its deadline did run."""


def emit_safely(on_event: EventSink, event: Event) -> None:
    """Give `event` to the listener; a listener that raises is logged, never fatal."""
    try:
        on_event(event)
    except Exception:
        logger.exception("event listener raised on %s", type(event).__name__)


class ProgressReporter:
    """The progress callback of one call's ToolContext.

    Emits a `ToolProgress` event at once. Safe from any thread: off the
    event-loop thread (a sync tool's worker, or a thread the tool started) it
    hops to the loop with `anyio.from_thread.run_sync`, blocking the caller
    until the listener ran. After the call ended (or its thread was left
    behind) progress is dropped.
    """

    __slots__ = ("_call_id", "_closed", "_key", "_on_event", "_thread", "_token")

    def __init__(self, call_id: str, on_event: EventSink, *, key: str = "") -> None:
        self._call_id = call_id
        self._key = key
        self._on_event = on_event
        self._thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()
        self._closed = False

    def _emit(self, message: str, fraction: float | None) -> None:
        if not self._closed:
            emit_safely(
                self._on_event,
                ToolProgress(self._call_id, message, key=self._key, fraction=fraction),
            )

    def __call__(self, message: str, fraction: float | None) -> None:
        if self._closed:
            return
        if threading.get_ident() == self._thread:
            self._emit(message, fraction)
        else:
            anyio.from_thread.run_sync(self._emit, message, fraction, token=self._token)

    def close(self) -> None:
        """Drop any progress reported from now on."""
        self._closed = True


@dataclass(slots=True)
class Executed:
    """How the tool call went."""

    output: object = None
    """The raw output (a `ToolOutput` unwrapped)."""
    error: str | None = None
    """The failure, in words for the model; None = it succeeded."""
    stop: str | None = None
    """Set when the tool raised `StopRun`: why the run should stop."""
    timed_out: bool = False
    """The call ran past its timeout."""
    thread_left: bool = False
    """A worker thread that cannot be stopped was left running at the timeout."""
    modifier: Callable[[], object] | None = None
    """The context modifier the tool returned, if any."""


def _seconds(value: float) -> str:
    return f"{value:g}"


def _describe(exc: Exception) -> str:
    if isinstance(exc, ToolError):
        return str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def failure_of(tool: Tool, exc: BaseException) -> Executed | None:
    """How a call whose tool raised `exc` went; None = `exc` must propagate.

    StopRun asks the run to stop (its reason is the output); any other
    Exception (ModelRetry and ToolError included: their text is for the model)
    is the call's error; a cancellation exception nothing outside asked for is
    the tool's own error. Real cancellation, KeyboardInterrupt and SystemExit
    give None. Call it in the ``except`` block that caught `exc` (it asks
    whether the task is being cancelled); the runner's own path calls it too.
    """
    if isinstance(exc, StopRun):
        reason = str(exc) or f"tool {tool.name} stopped the run"
        return Executed(output=reason, stop=reason)
    if isinstance(exc, Exception):
        logger.debug("tool %s failed", tool.name, exc_info=exc)
        return Executed(error=_describe(exc))
    if is_cancellation(exc) and not cancelled_from_outside():
        return Executed(
            error=f"{type(exc).__name__} raised by the tool itself (nothing"
            " cancelled it)"
        )
    return None


def returned(output: object) -> Executed:
    """How a call whose tool returned `output` went (a `ToolOutput` unwrapped).

    An awaitable or an async generator is no result: a tool that returns one
    (a ``def`` that calls an async function and returns what it gave, an
    ``async def`` that forgets an ``await``) fails with an error naming the
    mistake (`not_a_result`), never a success holding the object's repr. A
    coroutine is closed, so it never runs and Python warns of nothing ("never
    awaited").
    """
    if isinstance(output, ToolOutput):
        return Executed(output=output.content, modifier=output.context_modifier)
    mistake = not_a_result(output)
    if mistake is not None:
        return Executed(error=mistake)
    return Executed(output=output)


async def call_tool(tool: Tool, args: dict[str, object], ctx: ToolContext) -> Executed:
    """Call the tool; map ToolOutput, StopRun and exceptions (`failure_of`, `returned`).

    Real cancellation, KeyboardInterrupt and SystemExit propagate. A
    cancellation exception nothing outside asked for is the tool's own error.
    """
    try:
        output = await tool.call(args, ctx)
    except BaseException as exc:
        executed = failure_of(tool, exc)
        if executed is None:
            raise
        return executed
    return returned(output)


async def execute(
    tool: Tool,
    args: dict[str, object],
    ctx: ToolContext,
    limit: float | None,
    *,
    zone: AbandonRecord | None = None,
) -> Executed:
    """Run the tool for at most `limit` seconds (None = no limit); raises only cancellation.

    At the deadline the call is cancelled whatever its `interrupt` (that governs
    *user* interrupts only): a timeout bounds the wall clock (issue 13, item 3).
    Work on a worker thread cannot be stopped, so its thread is abandoned — the
    call is answered at the deadline and the thread finishes on its own, counted
    by the Dispatcher's host. A tool that swallowed the cancellation and returned
    late has still timed out (its context modifier is kept: the work was done).
    `zone` is the call's own record to run in (the audit's scope, which carries
    the audit into the call's tasks and threads); one is made if needed.
    """
    if limit is None:
        if zone is None:
            return await call_tool(tool, args, ctx)
        with abandoning_threads(zone):
            return await call_tool(tool, args, ctx)
    executed: Executed | None = None
    if zone is None:
        zone = AbandonRecord()
    zone.abandons = True  # the deadline answers the call: its threads are left
    with abandoning_threads(zone) as abandoned, DeadlineScope(limit) as scope:
        executed = await call_tool(tool, args, ctx)
    # expired, not cancelled_caught: a late return after the deadline counts.
    if executed is not None and not scope.expired:
        return executed
    left = abandoned.count > 0
    note = (
        " It ran on a worker thread, which cannot be stopped; the thread was"
        " abandoned and may still finish its work."
        if left
        else ""
    )
    return Executed(
        error=f"Tool {tool.name!r} timed out after {_seconds(limit)} s.{note}"
        f"{EFFECTS_UNKNOWN_AFTER_TIMEOUT}",
        timed_out=True,
        thread_left=left,
        modifier=executed.modifier if executed is not None else None,
    )
