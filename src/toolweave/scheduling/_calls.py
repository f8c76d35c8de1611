"""Running one call for the engine: the runner and listener types, `invoke`, stop reasons."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

from ..messages import ToolCall, ToolResult
from ..tools._cancel import cancelled_from_outside, is_cancellation
from ..tools._deadline import DeadlineScope
from ..tools._threads import abandoning_threads
from ._results import coerce_result, runner_failed, timed_out

__all__ = [
    "CLOSED",
    "DISCARDED",
    "INTERRUPTED",
    "CallScope",
    "CompletedListener",
    "Runner",
    "StartedListener",
    "fatal_reason",
    "fire_completed",
    "fire_started",
    "guarded",
    "invoke",
]

logger = logging.getLogger("toolweave.scheduling")

Runner = Callable[[ToolCall], Awaitable[ToolResult]]
StartedListener = Callable[[ToolCall], object]
CompletedListener = Callable[[ToolCall, ToolResult], object]

INTERRUPTED = "interrupted by the user"
CLOSED = "the dispatcher was closed"
DISCARDED = "the model response was discarded (retried or truncated)"


def fatal_reason(exc: BaseException) -> str:
    """Why the rest of a batch is stopped after a tool raised `exc`."""
    return f"a tool raised {type(exc).__name__}"


def fire_started(listener: StartedListener | None, call: ToolCall) -> None:
    """Call an on_started listener; log and swallow whatever it raises."""
    if listener is None:
        return
    try:
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
    with abandoning_threads(), CallScope(ceiling) as scope:
        result = await guarded(runner, call)
    answer = scope.answer(call, result)
    return answer if answer is not None else timed_out(call, ceiling)


class CallScope:
    """One running call's only cancel scope: its owner's cancel and its ceiling, in one.

    Why one scope: a call under both a cancel its owner may send (a selective
    cancel, a user interrupt) and the per-call ceiling used to nest two anyio
    scopes, each with its own bookkeeping, and that doubled the engine's cost per
    call. The ceiling is a `DeadlineScope` deadline, which shares one timer per
    event loop instead of arming one per call.

    Contract: enter it around the call, inside an `abandoning_threads` zone when
    there is a ceiling (the batch sets one zone for all its calls); call `cancel`
    to stop it for the owner; after the block, `answer(call, result)` gives the
    ceiling's timeout result if the deadline cut the call off first, else
    `result` unchanged (None if the owner cancelled it). Whichever came first
    wins, even if the other fires while the tool is still unwinding: a cancel
    after the deadline fired leaves a timeout, a deadline passing after the
    owner's cancel leaves the cancel.
    """

    __slots__ = ("_scope", "ceiling")

    def __init__(self, ceiling: float | None) -> None:
        self.ceiling = ceiling
        self._scope = DeadlineScope(ceiling)

    def __enter__(self) -> CallScope:
        self._scope.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        return self._scope.__exit__(exc_type, exc, tb)

    def cancel(self) -> None:
        """Stop the call for its owner; a no-op once its deadline already cut it off."""
        self._scope.cancel()

    def answer(self, call: ToolCall, result: ToolResult | None) -> ToolResult | None:
        """`result`, or the ceiling's timeout result if the deadline passed first.

        Also when the call returned after the deadline (a shielded part ran
        on): the ceiling bounds the call whatever it does, as a tool's own
        timeout does (its context change is kept).
        """
        if not self._scope.expired:
            return result
        assert self.ceiling is not None  # only a deadline expires
        if result is None:
            return timed_out(call, self.ceiling) if self.cancelled_caught else None
        return timed_out(call, self.ceiling, late=result)

    @property
    def cancelled_caught(self) -> bool:
        """True if the call was cut off (by its owner or its deadline)."""
        return self._scope.cancelled_caught


async def guarded(runner: Runner, call: ToolCall) -> ToolResult:
    """`runner(call)`; a fault (an exception, a self-raised cancel, no result) is an error result.

    Real cancellation, KeyboardInterrupt and SystemExit propagate.
    """
    try:
        result = await runner(call)
    except Exception as exc:
        return runner_failed(call, exc)
    except BaseException as exc:
        if is_cancellation(exc) and not cancelled_from_outside():
            return runner_failed(call, exc)
        raise
    return coerce_result(call, result)
