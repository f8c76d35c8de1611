"""Alarm: one asyncio loop's pending deadlines behind one timer; which backend runs.

Why: every call runs under a deadline, and an anyio scope with a deadline arms
an event-loop timer of its own. With hundreds of calls in flight on asyncio
that is hundreds of timers pushed onto, and cancelled from, the loop's heap
(measured: about half of the scheduler's cost per call). Here the deadlines
of one asyncio loop wait in one heap behind one timer that fires at the
earliest (`Alarm`); `DeadlineScope` and the Dispatcher's ceilings arm it.

The per-thread cache of "the running loop and its alarm" doubles as the
engine's one answer to "are we on asyncio?" (`on_asyncio`): sniffio is asked
once per event loop, not once per call.

Loop affinity: an alarm is armed, disarmed and fired on its loop's thread; the
cache is per thread and never shared.

Private reads: none (public asyncio and sniffio only).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, final

import sniffio

from . import anyio_tasks

__all__ = ["Alarm", "Entry", "Expiring", "alarm_here", "here", "on_asyncio"]

Entry = list[Any]
"""An alarm entry: ``[when, sequence, target or None once disarmed]``."""


class Expiring(Protocol):
    """What an alarm entry waits for: told once its time has come."""

    def expire(self) -> None:
        """The entry's time has come (called on the loop, from the alarm's timer)."""


@final
class Alarm:
    """One asyncio loop's pending deadlines and the timer set for the earliest."""

    __slots__ = ("_clock", "_handle", "_heap", "_live", "_loop", "_sequence", "_when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # The loop's clock. The stdlib loop's time() only returns time.monotonic();
        # call that directly (a loop class with its own clock keeps its own).
        standard = getattr(type(loop), "time", None) is asyncio.BaseEventLoop.time
        clock = time.monotonic if standard else loop.time  # noqa: TID251
        self._clock: Callable[[], float] = clock
        self._heap: list[Entry] = []
        self._live = 0
        self._sequence = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._when = math.inf

    @property
    def clock(self) -> Callable[[], float]:
        """The loop's clock, which entries' times are read on."""
        return self._clock

    def arm(self, target: Expiring, seconds: float) -> Entry:
        """Call ``target.expire()`` once `seconds` have passed; `disarm` the entry to forget it."""
        return self.arm_at(target, self._clock() + seconds)

    def arm_at(self, target: Expiring, when: float) -> Entry:
        """Call ``target.expire()`` at `when` on `clock`."""
        entry: Entry = [when, next(self._sequence), target]
        heapq.heappush(self._heap, entry)
        self._live += 1
        if when < self._when:
            self._set_timer(when)
        return entry

    def disarm(self, entry: Entry) -> None:
        """Forget an entry (a no-op once it fired)."""
        if entry[2] is None:
            return
        entry[2] = None
        self._live -= 1
        heap = self._heap
        # Disarmed entries wait for their time to be dropped; keep them few.
        if len(heap) > 64 and len(heap) > 2 * self._live:
            self._heap = [e for e in heap if e[2] is not None]
            heapq.heapify(self._heap)
        if not self._live:
            # The timer stays set: calls that start and end within one step
            # would otherwise set and cancel it every time.
            self._heap.clear()

    def _set_timer(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._when = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle, self._when = None, math.inf
        now = self._clock()
        heap = self._heap
        while heap and (heap[0][2] is None or heap[0][0] <= now):
            entry = heapq.heappop(heap)
            scope = entry[2]
            if scope is not None:
                entry[2] = None
                self._live -= 1
                scope.expire()
        if heap:
            self._set_timer(heap[0][0])


class _PerThread(threading.local):
    """The event loop last seen on this thread, and its alarm (None: not asyncio)."""

    loop: asyncio.AbstractEventLoop | None = None
    alarm: Alarm | None = None


here = _PerThread()
"""This thread's cache; `DeadlineScope` reads it directly on its hot path."""


def alarm_here() -> Alarm | None:
    """This thread's asyncio loop's alarm; None when not running under asyncio."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop runs here (trio, or no loop at all)
        return None
    if loop is not here.loop:
        # A new loop in this thread: asyncio only if sniffio agrees (trio-asyncio).
        alarm = Alarm(loop) if sniffio.current_async_library() == "asyncio" else None
        if alarm is not None and not anyio_tasks.probed:
            anyio_tasks.probe()
        here.loop, here.alarm = loop, alarm
    return here.alarm


def on_asyncio() -> bool:
    """True when running under asyncio (sniffio is asked once per event loop).

    Never a checkpoint. The answer is the one the deadlines' per-loop alarm
    keeps, so the engine has one per-loop cache of it, not two.
    """
    return alarm_here() is not None
