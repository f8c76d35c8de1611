"""DeadlineScope: a cancel scope with a deadline, on one shared timer per event loop.

Why: every call runs under a deadline (its tool's timeout, the Dispatcher's
per-call ceiling), and an anyio scope with a deadline arms an event-loop timer
of its own and reads the clock through sniffio. With hundreds of calls in
flight on asyncio that is hundreds of timers pushed onto, and cancelled from,
the loop's heap: measured, about half of the scheduler's cost per call.
Here the deadlines of one asyncio loop wait in one heap behind one timer that
fires at the earliest; an expired scope is cancelled with anyio's own
`cancel()`, so cancellation stays anyio's (level-triggered, shields
respected). On trio (and any other backend) the scope's native deadline is
used: trio keeps deadlines cheaply itself.

Loop affinity: a scope is entered, cancelled and left on its event loop's
thread; the asyncio timer state is per loop and never shared across threads.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
from types import TracebackType
from typing import Any, final

import anyio
import sniffio

__all__ = ["DeadlineScope"]

_Entry = list[Any]  # [when, sequence, scope or None once disarmed]


@final
class _Alarm:
    """One asyncio loop's pending deadlines and the timer set for the earliest."""

    __slots__ = ("_handle", "_heap", "_live", "_loop", "_sequence", "_when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[_Entry] = []
        self._live = 0
        self._sequence = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._when = math.inf

    def arm(self, scope: DeadlineScope, seconds: float) -> _Entry:
        when = self._loop.time() + seconds
        entry: _Entry = [when, next(self._sequence), scope]
        heapq.heappush(self._heap, entry)
        self._live += 1
        if when < self._when:
            self._set_timer(when)
        return entry

    def disarm(self, entry: _Entry) -> None:
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
        now = self._loop.time()
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
    loop: asyncio.AbstractEventLoop | None = None
    alarm: _Alarm | None = None


_here = _PerThread()
_asyncio_scope: type[anyio.CancelScope] | None = None


def _alarm_here() -> _Alarm | None:
    """This thread's asyncio loop's alarm; None when not running under asyncio."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return None
    if loop is not _here.loop:
        # A new loop in this thread: asyncio only if sniffio agrees (trio-asyncio).
        alarm = _Alarm(loop) if sniffio.current_async_library() == "asyncio" else None
        _here.loop, _here.alarm = loop, alarm
    return _here.alarm


def _new_scope(alarm: _Alarm | None) -> anyio.CancelScope:
    global _asyncio_scope
    if alarm is None:
        return anyio.CancelScope()
    if _asyncio_scope is None:
        _asyncio_scope = type(anyio.CancelScope())
    # The backend's class itself: anyio.CancelScope() would ask sniffio again.
    return _asyncio_scope()


@final
class DeadlineScope:
    """A cancel scope that is cancelled once `seconds` have passed since it was entered.

    `seconds=None`: no deadline, only `cancel()`. Use it as anyio's
    `CancelScope`: ``with DeadlineScope(5) as scope: ...``; afterwards
    `expired` says whether the deadline (not `cancel()`) stopped the block,
    and `cancelled_caught` whether the block was cut off. Whichever of the
    two came first is the one reported.
    """

    __slots__ = ("_alarm", "_entry", "_scope", "_seconds", "cut", "expired")

    def __init__(self, seconds: float | None = None) -> None:
        self._seconds = seconds
        self._alarm = _alarm_here()
        self._scope = _new_scope(self._alarm)
        self._entry: _Entry | None = None
        self.expired = False
        """True if the deadline passed while the scope was active (and before any cancel)."""
        self.cut = False
        """True if `cancel()` came first."""

    def __enter__(self) -> DeadlineScope:
        self._scope.__enter__()
        seconds = self._seconds
        if seconds is not None:
            if self._alarm is not None:
                self._entry = self._alarm.arm(self, seconds)
            else:
                self._scope.deadline = anyio.current_time() + seconds
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        entry = self._entry
        if entry is not None:
            self._entry = None
            assert self._alarm is not None
            self._alarm.disarm(entry)
        try:
            return self._scope.__exit__(exc_type, exc, tb)
        finally:
            if (
                self._alarm is None
                and self._seconds is not None
                and not self.cut
                and self._scope.cancel_called
            ):
                self.expired = True  # trio: the native deadline cancelled it

    @property
    def cancelled_caught(self) -> bool:
        """True if the block was cut off (by the deadline or `cancel()`)."""
        return self._scope.cancelled_caught

    @property
    def cancel_called(self) -> bool:
        """True once the deadline passed or `cancel()` was called."""
        return self._scope.cancel_called

    def cancel(self) -> None:
        """Cancel the block for its owner; a no-op once the deadline cut it off."""
        if not self._scope.cancel_called:
            self.cut = True
            self._scope.cancel()

    def expire(self) -> None:
        """The deadline passed (the shared timer calls this); a no-op after `cancel()`."""
        if not self._scope.cancel_called:
            self.expired = True
            self._scope.cancel()
