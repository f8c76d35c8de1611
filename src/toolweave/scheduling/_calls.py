"""Running one call for the engine: the runner and listener types, `invoke`, stop reasons."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import final

from .._native.cancel import cancelled_from_outside, is_cancellation
from .._native.deadline import DeadlineScope
from .._native.threads import abandoning_threads
from ..messages import ToolCall, ToolResult
from ..tools import Access, Interrupt, Tool
from ._gate import CallPlan
from ._results import coerce_result, runner_failed, timed_out

__all__ = [
    "CLOSED",
    "DISCARDED",
    "INTERRUPTED",
    "CompletedListener",
    "Runner",
    "StartedListener",
    "StartedWithAccess",
    "at_ceiling",
    "cancellable",
    "fatal_reason",
    "fault_result",
    "fire_completed",
    "fire_started",
    "guarded",
    "invoke",
    "prepare",
]

logger = logging.getLogger("toolweave.scheduling")

Runner = Callable[[ToolCall], Awaitable[ToolResult]]
StartedListener = Callable[[ToolCall], object]
CompletedListener = Callable[[ToolCall, ToolResult], object]

INTERRUPTED = "interrupted by the user"
CLOSED = "the dispatcher was closed"
DISCARDED = (
    "the model response it came from was discarded (retried, cut at max_tokens"
    " or refused)"
)


def fatal_reason(exc: BaseException) -> str:
    """Why the rest of a batch is stopped after a tool raised `exc`."""
    return f"a tool raised {type(exc).__name__}"


@final
class StartedWithAccess:
    """An `on_started` listener that is also told what the gate classified each call as touching.

    Pass one as `on_started` to `Dispatcher.dispatch` or `open_stream`: where the
    scheduler classified the call (a batch of two or more calls, a stream) it
    calls `fn` with the call and its `Access` (a barrier for an undeclared
    SEQUENTIAL call, a read of everything for an undeclared SAFE one: exactly
    what it scheduled by); where it classified nothing (a call run alone,
    concurrency off) with None. A recorder learns from it what each call
    claimed, with no registry and no second classification.
    """

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[ToolCall, Access | None], object]) -> None:
        self._fn = fn

    def __call__(self, call: ToolCall) -> None:
        """Told without an access (a path that classified nothing)."""
        self._fn(call, None)

    def started(self, call: ToolCall, access: Access | None) -> None:
        """Told with the call's access as the gate classified it."""
        self._fn(call, access)


def fire_started(
    listener: StartedListener | None, call: ToolCall, access: Access | None = None
) -> None:
    """Call an on_started listener; log and swallow whatever it raises.

    A `StartedWithAccess` is told `access` too (None where it is not known).
    """
    if listener is None:
        return
    try:
        if type(listener) is StartedWithAccess:
            listener.started(call, access)
        else:
            listener(call)
    except Exception:
        logger.exception("on_started listener %r raised; ignored", listener)


def fire_completed(
    listener: CompletedListener | None, call: ToolCall, result: ToolResult
) -> None:
    """Call an on_completed listener; log and swallow whatever it raises."""
    if listener is None:
        return
    try:
        listener(call, result)
    except Exception:
        logger.exception("on_completed listener %r raised; ignored", listener)


def cancellable(plan: CallPlan) -> bool:
    """A running call an interrupt (or a tool's fatal exception) cancels: CANCEL ones."""
    return plan.interrupt is Interrupt.CANCEL


async def prepare(tool: Tool) -> None:
    """Await a tool's readiness step; a failure is logged and the call reports it.

    Seed 001: readiness waits happen outside the gate, before any slot.
    """
    try:
        await tool.prepare()
    except Exception:
        logger.exception("readiness step of %r failed; the call will report it", tool)


async def invoke(
    runner: Runner, call: ToolCall, ceiling: float | None = None
) -> ToolResult:
    """Run one call through the runner, within `ceiling` seconds; a fault is an error result.

    A cancellation exception that nothing outside asked for (the tool raised
    CancelledError by itself) is a fault too. Real cancellation, KeyboardInterrupt
    and SystemExit propagate (the batch answers the call and re-raises the latter).
    At the ceiling the runner is cancelled, whatever the tool's `interrupt`, and a
    worker thread it waits on is abandoned (issue 13, item 3).
    """
    if ceiling is None:
        return await guarded(runner, call)
    result: ToolResult | None = None
    with abandoning_threads(), DeadlineScope(ceiling) as scope:
        result = await guarded(runner, call)
    answer = at_ceiling(scope, call, result, ceiling)
    return answer if answer is not None else timed_out(call, ceiling)


def at_ceiling(
    scope: DeadlineScope,
    call: ToolCall,
    result: ToolResult | None,
    ceiling: float | None,
) -> ToolResult | None:
    """`result`, or the ceiling's timeout result if `scope`'s deadline passed first.

    One running call has one cancel scope, a `DeadlineScope` whose deadline is
    the call's ceiling (one shared timer per event loop, not one per call) and
    whose `cancel()` is its owner's (a selective cancel, a user interrupt): two
    nested scopes doubled the engine's cost per call. Enter it inside an
    `abandoning_threads` zone when there is a ceiling (the batch sets one zone
    for all its calls). After the block: None if the owner cut the call, the
    timeout result if the deadline did, else `result` unchanged. Whichever
    came first wins, even if the other fires while the tool is still
    unwinding. A call that returned after its deadline (a shielded part ran
    on) is timed out too, as for a tool's own timeout: output withheld,
    context change kept.
    """
    if not scope.expired:
        return result
    assert ceiling is not None  # only a deadline expires
    if result is None:
        return timed_out(call, ceiling) if scope.cancelled_caught else None
    return timed_out(call, ceiling, late=result)


async def guarded(runner: Runner, call: ToolCall) -> ToolResult:
    """`runner(call)`; a fault (an exception, a self-raised cancel, no result) is an error result.

    Real cancellation, KeyboardInterrupt and SystemExit propagate.
    """
    try:
        result = await runner(call)
    except BaseException as exc:
        answer = fault_result(call, exc)
        if answer is None:
            raise
        return answer
    if type(result) is ToolResult and result.call_id == call.id:
        return result  # what every runner returns: no call needed to say so
    return coerce_result(call, result)


def fault_result(call: ToolCall, exc: BaseException) -> ToolResult | None:
    """The error result for a runner that raised `exc`; None if `exc` must propagate.

    A fault is any Exception, or a cancellation nothing outside asked for (the
    runner raised it by itself). Real cancellation, KeyboardInterrupt and
    SystemExit propagate. Call it while `exc` propagates (it reads whether the
    task is being cancelled).
    """
    if isinstance(exc, Exception) or (
        is_cancellation(exc) and not cancelled_from_outside()
    ):
        return runner_failed(call, exc)
    return None
