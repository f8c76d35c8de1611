"""Batch arithmetic: makespan, the serial time, and the dependency lower bound.

What a batch took against what it must take: the CLI's live view, timeline and
demo report these figures, and the benchmarks measure the policies against
`dependency_bound`. Pure functions of recorded spans; no clock is read here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from ..tools import Access

__all__ = [
    "BatchStats",
    "CallSpan",
    "DeclaredKeys",
    "Interval",
    "batch_stats",
    "dependency_bound",
    "overlapping",
]

_EPSILON = 1e-6


Interval: TypeAlias = tuple[float, float]
"""``(start, end)`` in seconds on one clock."""


class DeclaredKeys(Protocol):
    """The resource keys a call declared: an `Access`, or a stored record of one."""

    @property
    def reads(self) -> Sequence[str]:
        """Keys read."""
        ...

    @property
    def writes(self) -> Sequence[str]:
        """Keys written (``"*"``: everything, a barrier)."""
        ...


@dataclass(frozen=True, slots=True)
class CallSpan:
    """When one call of a batch ran, and what it declared it touches."""

    start: float | None
    """When it began executing; None if it never ran."""
    end: float | None
    """When it finished; None if it never ran."""
    access: DeclaredKeys | None = None
    """Its declared access; None if not recorded (then it counts as independent
    in the lower bound: a bound must not assume a conflict nobody recorded)."""
    waits: tuple[Interval, ...] = ()
    """When it waited for the user's answer to a permission ask (before it ran)."""

    @property
    def duration(self) -> float:
        """Seconds it ran (0 if it never ran)."""
        if self.start is None or self.end is None:
            return 0.0
        return max(0.0, self.end - self.start)


@dataclass(frozen=True, slots=True)
class BatchStats:
    """One batch: what it took, what serial execution would take, what it must take.

    Time spent waiting for a person is not the tools' time: while a call waits
    for the user's permission and no call runs, the batch's clock is stopped
    (`makespan` leaves it out), and `permission_wait` says how long it was.
    """

    calls: int
    """Calls in the batch."""
    makespan: float
    """Wall time from the first call's start to the last call's end, less the
    time in between when a call waited for permission and none ran."""
    serial: float
    """The sum of the calls' durations: running them one after another."""
    ideal: float
    """The dependency lower bound: the longest chain of conflicting calls (call order)."""
    permission_wait: float = 0.0
    """Seconds a call of the batch waited for the user's permission (overlaps counted once)."""
    unknown_access: int = 0
    """Calls whose access was not recorded (independent in `ideal`)."""

    @property
    def speedup(self) -> float:
        """Serial / makespan (1.0 for an empty batch)."""
        return self.serial / self.makespan if self.makespan > _EPSILON else 1.0


def _access(span: CallSpan) -> Access:
    if span.access is None:
        return Access()  # not recorded: no conflict is known
    if isinstance(span.access, Access):
        return span.access
    return Access(span.access.reads, span.access.writes)


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for lo, hi in sorted(i for i in intervals if i[1] > i[0]):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def _measure(intervals: Iterable[Interval]) -> float:
    return sum(hi - lo for lo, hi in intervals)


def _idle_waiting(
    waits: list[Interval], ran: list[Interval], lo: float, hi: float
) -> float:
    """Time in [lo, hi] covered by `waits` and by none of `ran` (both merged)."""
    idle = 0.0
    for w_lo, w_hi in waits:
        a, b = max(w_lo, lo), min(w_hi, hi)
        if b <= a:
            continue
        covered = _measure(
            (max(a, r_lo), min(b, r_hi)) for r_lo, r_hi in ran if r_hi > a and r_lo < b
        )
        idle += (b - a) - covered
    return idle


def batch_stats(spans: Sequence[CallSpan]) -> BatchStats:
    """Makespan, serial time and lower bound of a batch, spans in call order.

    The lower bound uses the measured durations: each call must follow every
    earlier call it conflicts with (write/write or read/write on overlapping
    keys), exactly the rule the `conflict` policy schedules by, so no schedule
    that keeps the serial transcript can beat it. A batch recorded with each
    call's access therefore never shows a makespan below it: conflicting calls
    run one after another, and the time left out of the makespan (a permission
    wait while nothing ran) holds no call's running time.
    """
    ran = [(s.start, s.end) for s in spans if s.start is not None and s.end is not None]
    waits = _union(w for s in spans for w in s.waits)
    makespan = 0.0
    if ran:
        lo, hi = min(r[0] for r in ran), max(r[1] for r in ran)
        makespan = max(0.0, hi - lo - _idle_waiting(waits, _union(ran), lo, hi))
    return BatchStats(
        calls=len(spans),
        makespan=makespan,
        serial=sum(s.duration for s in spans),
        ideal=dependency_bound(
            [_access(s) for s in spans], [s.duration for s in spans]
        ),
        permission_wait=_measure(waits),
        unknown_access=sum(
            1 for s in spans if s.access is None and s.start is not None
        ),
    )


def dependency_bound(accesses: Sequence[Access], durations: Sequence[float]) -> float:
    """The longest chain of conflicting calls, in call order.

    Each call must follow every earlier call it conflicts with (write/write or
    read/write on overlapping keys): no schedule that keeps the serial transcript
    finishes sooner. Computed pairwise, independently of the scheduler's planners.
    """
    finish: list[float] = []
    for i, (access, duration) in enumerate(zip(accesses, durations, strict=True)):
        ready = max(
            (finish[j] for j in range(i) if accesses[j].conflicts_with(access)),
            default=0.0,
        )
        finish.append(ready + duration)
    return max(finish, default=0.0)


def overlapping(
    spans: Sequence[CallSpan], index: int, *, now: float | None = None
) -> list[int]:
    """Indices of the calls whose running interval overlaps call `index`'s.

    A call still running counts as running until `now` (if given).
    """

    def interval(span: CallSpan) -> tuple[float, float] | None:
        if span.start is None:
            return None
        end = span.end if span.end is not None else now
        return None if end is None else (span.start, end)

    mine = interval(spans[index])
    if mine is None:
        return []
    out = []
    for j, other in enumerate(spans):
        theirs = interval(other) if j != index else None
        if (
            theirs is not None
            and theirs[0] < mine[1] - _EPSILON
            and mine[0] < theirs[1] - _EPSILON
        ):
            out.append(j)
    return out
