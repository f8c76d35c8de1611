"""Batch arithmetic: makespan, the serial time, and the dependency lower bound."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..sessions import AccessRecord
from ..tools import Access

__all__ = [
    "BatchStats",
    "CallSpan",
    "batch_stats",
    "dependency_bound",
    "fmt_seconds",
    "overlapping",
]

_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class CallSpan:
    """When one call of a batch ran, and what it declared it touches."""

    start: float | None
    """When it began executing; None if it never ran."""
    end: float | None
    """When it finished; None if it never ran."""
    access: AccessRecord | None = None
    """Its declared access; None counts as a barrier (fail closed)."""

    @property
    def duration(self) -> float:
        """Seconds it ran (0 if it never ran)."""
        if self.start is None or self.end is None:
            return 0.0
        return max(0.0, self.end - self.start)


@dataclass(frozen=True, slots=True)
class BatchStats:
    """One batch: what it took, what serial execution would take, what it must take."""

    calls: int
    """Calls in the batch."""
    makespan: float
    """Wall time from the first call's start to the last call's end."""
    serial: float
    """The sum of the calls' durations: running them one after another."""
    ideal: float
    """The dependency lower bound: the longest chain of conflicting calls (call order)."""

    @property
    def speedup(self) -> float:
        """Serial / makespan (1.0 for an empty batch)."""
        return self.serial / self.makespan if self.makespan > _EPSILON else 1.0


def fmt_seconds(seconds: float) -> str:
    """``0.85 s``, or ``12.3 ms`` below a tenth of a second."""
    if seconds < 0.1:
        return f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s"


def _access(span: CallSpan) -> Access:
    if span.access is None:
        return Access.barrier()
    return Access(span.access.reads, span.access.writes)


def batch_stats(spans: Sequence[CallSpan]) -> BatchStats:
    """Makespan, serial time and lower bound of a batch, spans in call order.

    The lower bound uses the measured durations: each call must follow every
    earlier call it conflicts with (write/write or read/write on overlapping
    keys), exactly the rule the `conflict` policy schedules by, so no schedule
    that keeps the serial transcript can beat it.
    """
    ran = [s for s in spans if s.start is not None and s.end is not None]
    makespan = 0.0
    if ran:
        makespan = max(s.end for s in ran if s.end is not None) - min(
            s.start for s in ran if s.start is not None
        )
    return BatchStats(
        calls=len(spans),
        makespan=makespan,
        serial=sum(s.duration for s in spans),
        ideal=dependency_bound(
            [_access(s) for s in spans], [s.duration for s in spans]
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
