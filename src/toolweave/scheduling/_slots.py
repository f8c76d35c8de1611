"""Slots: the engine's caps (per batch, per host) as counters with a fair queue."""

from __future__ import annotations

from collections import deque
from typing import final

import anyio.lowlevel

from .._native.wakeup import Wakeup

__all__ = ["Slots"]


@final
class Slots:
    """At most `total` slots taken at once; waiters are served first come, first served.

    Why not anyio's `CapacityLimiter`: it ties each slot to a borrower (a task
    or token) in a set, which the engine never needs, and that bookkeeping was
    a measurable share of its cost per call. Here taking and giving back a
    free slot is a counter step; only a waiter makes a `Wakeup`. A slot given
    back goes straight to the oldest waiter, so a later `try_take` cannot
    jump the queue. Loop affinity: one event loop; not thread-safe.
    """

    __slots__ = ("_waiters", "total", "used")

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        """Slots taken (held, or handed to a waiter that has not resumed yet)."""
        self._waiters: deque[Wakeup] = deque()

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
        waiter = Wakeup()
        self._waiters.append(waiter)
        try:
            await waiter.wait()
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
