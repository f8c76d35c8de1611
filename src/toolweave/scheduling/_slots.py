"""Slots: the engine's caps (per batch, per host) as counters with a fair queue."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import final

import anyio
import anyio.lowlevel

from ..tools._deadline import on_asyncio

__all__ = ["Slots"]


@final
class _Waiter:
    """One task in line for a slot, woken by `wake` once it is handed one.

    On asyncio the wait is a bare future of the loop (an anyio Event cost
    several objects and calls per wait, and a batch at its cap waits for every
    call it starts); elsewhere an anyio Event.
    """

    __slots__ = ("event", "future", "granted")

    def __init__(self) -> None:
        self.granted = False
        loop = asyncio._get_running_loop() if on_asyncio() else None
        self.future: asyncio.Future[None] | None = (
            loop.create_future() if loop is not None else None
        )
        self.event = anyio.Event() if loop is None else None

    def wake(self) -> None:
        future = self.future
        if future is None:
            assert self.event is not None
            self.event.set()
        elif not future.done():  # cancelled: its task gives the slot on
            future.set_result(None)


@final
class Slots:
    """At most `total` slots taken at once; waiters are served first come, first served.

    Why not anyio's `CapacityLimiter`: it ties each slot to a borrower (a task
    or token) in a set, which the engine never needs, and that bookkeeping was
    a measurable share of its cost per call. Here taking and giving back a
    free slot is a counter step; only a waiter makes an event. A slot given
    back goes straight to the oldest waiter, so a later `try_take` cannot
    jump the queue. Loop affinity: one event loop; not thread-safe.
    """

    __slots__ = ("_waiters", "total", "used")

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        """Slots taken (held, or handed to a waiter that has not resumed yet)."""
        self._waiters: deque[_Waiter] = deque()

    def try_take(self) -> bool:
        """Take a slot if one is free and nobody waits for one; never waits."""
        if self.used < self.total and not self._waiters:
            self.used += 1
            return True
        return False

    def try_take_with(self, other: Slots) -> bool:
        """Take a slot here and one in `other`, both or neither; never waits."""
        if (
            self.used < self.total
            and not self._waiters
            and other.used < other.total
            and not other._waiters
        ):
            self.used += 1
            other.used += 1
            return True
        return False

    def give_with(self, other: Slots) -> None:
        """Give back a slot here and one in `other` (what `try_take_with` took)."""
        if self._waiters or other._waiters:
            self.give()
            other.give()
        else:
            self.used -= 1
            other.used -= 1

    async def take(self) -> None:
        """Take a slot, waiting in line for one. Always a checkpoint.

        Cancelled while waiting: leaves the line; cancelled after a slot was
        handed over: gives it on. Either way no slot leaks.
        """
        if self.try_take():
            try:
                await anyio.lowlevel.checkpoint()
            except BaseException:
                self.give()
                raise
            return
        waiter = _Waiter()
        self._waiters.append(waiter)
        try:
            if waiter.future is not None:
                await waiter.future
            else:
                assert waiter.event is not None
                await waiter.event.wait()
        except BaseException:
            if waiter.granted:
                self.give()
            else:
                self._waiters.remove(waiter)
            raise

    def give(self) -> None:
        """Give a slot back: to the oldest waiter if there is one."""
        if self._waiters:
            waiter = self._waiters.popleft()
            waiter.granted = True
            waiter.wake()
            return
        self.used -= 1
