"""Wakeup: one task waiting to be woken once, at the cost each backend can afford.

Why: `scheduling.Slots` parks a task per call while a batch is at its cap, and
an anyio ``Event`` costs several objects and calls per wait on asyncio. There
the wait is a bare future of the running loop; elsewhere an anyio ``Event``.

Contract: made, waited on and woken on one event loop's thread; `wake` is
idempotent and a no-op once the waiter was cancelled (its future is done).
Private reads: none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import final

import anyio

from .alarm import on_asyncio

__all__ = ["Wakeup"]


@final
class Wakeup:
    """One task in line, woken by `wake`; `granted` is the waker's note to it."""

    __slots__ = ("event", "future", "granted")

    def __init__(self) -> None:
        self.granted = False
        """Set by the waker before `wake`: what the wait was for was handed over."""
        loop = asyncio.get_running_loop() if on_asyncio() else None
        self.future: asyncio.Future[None] | None = (
            loop.create_future() if loop is not None else None
        )
        self.event = anyio.Event() if loop is None else None

    def wait(self) -> Awaitable[object]:
        """What to await until `wake` (a checkpoint; cancellable).

        The future itself, not a coroutine around it: one frame less per wait.
        """
        future = self.future
        if future is not None:
            return future
        assert self.event is not None
        return self.event.wait()

    def wake(self) -> None:
        """Wake the waiter (once; later calls, or a cancelled waiter, do nothing)."""
        future = self.future
        if future is None:
            assert self.event is not None
            self.event.set()
        elif not future.done():  # cancelled: its task gives the slot on
            future.set_result(None)
