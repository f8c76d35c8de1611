"""Ceilings: one batch's per-call ceilings on asyncio, behind one alarm entry.

Why: a `DeadlineScope` per call (made, entered, armed, disarmed and left for
every call, though almost none ever reaches its ceiling) was the largest
single cost the engine added to a call. Here a call's start only records when
its ceiling passes, and the batch keeps one entry on the loop's shared alarm,
at the earliest of them. When it fires, the calls past their ceiling are cut,
each through a scope made for it then (`DeadlineScope.adopt`); the others wait
for the next entry.

Loop affinity: one asyncio loop (the alarm's); every method runs on its thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import final

from .._native.alarm import Alarm, Entry

__all__ = ["Ceilings"]


@final
class Ceilings:
    """When each running call of a batch reaches its ceiling; cuts it then.

    `cut(index)` is called on the loop for a call past its ceiling that
    `running(index)` still says is running; a call that finished is forgotten
    at the next expiry, never cut. `close()` drops the alarm entry (the batch
    is done): until then the entry keeps the batch alive.
    """

    __slots__ = ("_alarm", "_clock", "_cut", "_due", "_entry", "_next", "_running")

    def __init__(
        self,
        alarm: Alarm,
        cut: Callable[[int], None],
        running: Callable[[int], bool],
    ) -> None:
        """`alarm`: the loop's, from `native_alarm()`."""
        self._alarm = alarm
        self._clock = alarm.clock
        self._cut = cut
        self._running = running
        self._due: dict[int, float] = {}
        self._entry: Entry | None = None
        self._next = math.inf

    def start(self, index: int, seconds: float) -> None:
        """The call at `index` starts now; cut it once `seconds` have passed."""
        when = self._clock() + seconds
        self._due[index] = when
        if when < self._next:
            self._arm(when)

    def expire(self) -> None:
        """The alarm's callback: cut every running call past its ceiling, wait for the rest."""
        self._entry, self._next = None, math.inf
        now = self._clock()
        later: dict[int, float] = {}
        for index, when in self._due.items():
            if not self._running(index):
                continue
            if when <= now:
                self._cut(index)
            else:
                later[index] = when
        self._due = later
        if later:
            self._arm(min(later.values()))

    def close(self) -> None:
        """Drop the alarm entry; no call is cut after this."""
        self._due.clear()
        if self._entry is not None:
            self._alarm.disarm(self._entry)
            self._entry, self._next = None, math.inf

    def _arm(self, when: float) -> None:
        if self._entry is not None:
            self._alarm.disarm(self._entry)
        self._next = when
        self._entry = self._alarm.arm_at(self, when)
