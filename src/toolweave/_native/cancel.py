"""Telling a real cancellation from a tool that raised a cancellation exception itself."""

from __future__ import annotations

import asyncio
import math

import anyio
import sniffio

__all__ = ["cancelled_from_outside", "is_cancellation", "is_fatal", "sole_fatal"]


def is_cancellation(exc: BaseException) -> bool:
    """True for the running backend's cancellation exception or asyncio's.

    On trio a tool may still raise `asyncio.CancelledError` by hand; it is a
    cancellation *type* there too, and never a real one.
    """
    return isinstance(exc, asyncio.CancelledError | anyio.get_cancelled_exc_class())


def is_fatal(exc: BaseException) -> bool:
    """True for the exceptions that must reach the caller as themselves."""
    return isinstance(exc, KeyboardInterrupt | SystemExit)


def sole_fatal(exc: BaseException) -> BaseException | None:
    """The KeyboardInterrupt/SystemExit `exc` is, or is all a task group wrapped it in.

    None if `exc` is (or holds) anything else: then it must propagate as it is.
    """
    if is_fatal(exc):
        return exc
    if not isinstance(exc, BaseExceptionGroup):
        return None
    fatal, rest = exc.split(is_fatal)
    if rest is not None or fatal is None:
        return None
    leaf: BaseException = fatal
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


def cancelled_from_outside() -> bool:
    """True if the current task is being cancelled (by a scope, a task group, a caller).

    Call it while a cancellation exception propagates: False means nothing
    outside asked for it, so the code below raised it by itself (issue 13,
    item 7) and it is that code's error, not a cancellation. Never a checkpoint.
    """
    if anyio.current_effective_deadline() == -math.inf:
        return True  # an enclosing anyio/trio scope was cancelled
    if sniffio.current_async_library() == "asyncio":
        task = asyncio.current_task()
        # task.cancel() from a TaskGroup or a caller, which anyio scopes don't see
        return task is not None and task.cancelling() > 0
    return False
