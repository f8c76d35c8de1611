"""Running one call for the engine: the runner and listener types, `invoke`, stop reasons."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

import anyio

from ..messages import ToolCall, ToolResult
from ..tools._cancel import cancelled_from_outside, is_cancellation
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
        return await _invoke(runner, call)
    result: ToolResult | None = None
    with abandoning_threads(), anyio.move_on_after(ceiling):
        result = await _invoke(runner, call)
    return result if result is not None else timed_out(call, ceiling)


class CallScope:
    """One running call's only cancel scope: its owner's cancel and its ceiling, in one.

    Why one scope: a call under both a cancel its owner may send (a selective
    cancel, a user interrupt) and the per-call ceiling used to nest two anyio
    scopes, each with its own bookkeeping, and that doubled the engine's cost per
    call. Here the ceiling is the scope's deadline (armed only if there is one,
    together with the `abandoning_threads` zone it needs), and `cancel` marks the
    owner's cancel so `answer` can tell the two apart afterwards.

    Contract: enter it around the call; call `cancel` (never the scope's own) to
    stop it for the owner; after the block, `answer(call, result)` gives the
    ceiling's timeout result if the deadline cut the call off first, else
    `result` unchanged (None if the owner cancelled it). Whichever came first
    wins, even if the other fires while the tool is still unwinding: a cancel
    after the deadline fired leaves a timeout, a deadline passing after the
    owner's cancel leaves the cancel.
    """

    __slots__ = ("_scope", "_zone", "ceiling", "cut")

    def __init__(self, ceiling: float | None) -> None:
        self.ceiling = ceiling
        self.cut = False
        """True once the owner cancelled the call (before any deadline fired)."""
        self._scope = anyio.CancelScope()
        self._zone = abandoning_threads() if ceiling is not None else None

    def __enter__(self) -> CallScope:
        if self._zone is not None:
            assert self.ceiling is not None
            self._zone.__enter__()
            self._scope.deadline = anyio.current_time() + self.ceiling
        self._scope.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        try:
            return self._scope.__exit__(exc_type, exc, tb)
        finally:
            if self._zone is not None:
                self._zone.__exit__()

    def cancel(self) -> None:
        """Stop the call for its owner; a no-op once its deadline already cut it off."""
        if not self._scope.cancel_called:
            self.cut = True
            self._scope.cancel()

    def answer(self, call: ToolCall, result: ToolResult | None) -> ToolResult | None:
        """`result`, or the ceiling's timeout result if the deadline stopped the call."""
        if result is None and self._scope.cancelled_caught and not self.cut:
            assert self.ceiling is not None  # only a deadline cancels uncut
            return timed_out(call, self.ceiling)
        return result


async def _invoke(runner: Runner, call: ToolCall) -> ToolResult:
    try:
        result = await runner(call)
    except Exception as exc:
        return runner_failed(call, exc)
    except BaseException as exc:
        if is_cancellation(exc) and not cancelled_from_outside():
            return runner_failed(call, exc)
        raise
    return coerce_result(call, result)
