"""The timeline's data: a session's calls grouped by run and iteration, with batch stats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..scheduling import BatchStats, CallSpan, Interval, batch_stats, overlapping
from ..sessions import CallRecord, CallState, ModelCallRecord, SessionStore
from ._audit_view import (
    StoredViolation,
    stored_violations,
    violation_line,
    violations_by_call,
)

__all__ = [
    "CallBar",
    "IterationGroup",
    "load_groups",
    "outcome_of",
    "permission_waits",
]


def outcome_of(record: CallRecord) -> str:
    """Ok / error / synthetic / lost / skipped / discarded / waiting / running."""
    if record.state is CallState.DISCARDED:
        return "discarded"
    if record.state is CallState.LOST:
        return "lost"
    if record.state is CallState.SKIPPED:
        return "skipped"
    if record.result is not None:
        if record.result.synthetic:
            return "synthetic"
        return "error" if record.result.is_error else "ok"
    return "running" if record.state is CallState.RUNNING else "waiting"


@dataclass(frozen=True, slots=True)
class CallBar:
    """One call's lane: its record, drawn interval and overlapping lanes."""

    record: CallRecord
    """The stored call."""
    start: float | None
    """Bar start (execution start), relative to the run."""
    end: float | None
    """Bar end; for a call whose end is unknown, the last moment the run was seen."""
    overlaps: tuple[int, ...]
    """Indices (within the group) of bars overlapping this one."""
    violations: tuple[str, ...] = ()
    """What the declaration audit reported for the call, one line each."""
    waits: tuple[Interval, ...] = ()
    """When it waited for the user's answer to a permission ask."""

    @property
    def key(self) -> str:
        """``run/iteration/call ref/attempt``: unique within the session.

        The ref is the call's position key (`ToolCall.ref`): models repeat ids.
        """
        r = self.record
        return f"{r.run}/{r.iteration}/{r.call.ref}/{r.attempt}"


@dataclass(frozen=True, slots=True)
class IterationGroup:
    """The calls and the model call of one iteration."""

    run: int
    iteration: int
    model: ModelCallRecord | None
    bars: tuple[CallBar, ...]
    stats: BatchStats

    @property
    def bounds(self) -> tuple[float, float]:
        """The time span to draw (model call and every bar)."""
        times: list[float] = []
        if self.model is not None:
            times += [
                t
                for t in (self.model.started_at, self.model.finished_at)
                if t is not None
            ]
        for bar in self.bars:
            r = bar.record
            times += [t for t in (r.admitted_at, bar.start, bar.end) if t is not None]
        if not times:
            return 0.0, 1.0
        low, high = min(times), max(times)
        return low, max(high, low + 1e-3)


def _last_seen(calls: Sequence[CallRecord], models: Sequence[ModelCallRecord]) -> float:
    times = [
        t
        for c in calls
        for t in (c.admitted_at, c.running_at, c.finished_at)
        if t is not None
    ]
    times += [t for m in models for t in (m.started_at, m.finished_at) if t is not None]
    return max(times, default=0.0)


_Asks = Mapping[tuple[int, str], Sequence[tuple[float, float | None]]]
"""(run, call ref) → the call's permission waits; an end of None: never answered."""


def permission_waits(
    store: SessionStore, session_id: str
) -> dict[tuple[int, str], list[tuple[float, float | None]]]:
    """Each call's permission waits, from its stored `PermissionAsked`/`Answered` events."""
    waits: dict[tuple[int, str], list[tuple[float, float | None]]] = {}
    for event in store.events(session_id):
        if event.kind not in ("PermissionAsked", "PermissionAnswered"):
            continue
        ref = str(event.data.get("key") or event.data.get("call_id") or "")
        mine = waits.setdefault((event.run, ref), [])
        if event.kind == "PermissionAsked":
            mine.append((event.at, None))
        elif mine and mine[-1][1] is None:
            mine[-1] = (mine[-1][0], event.at)
    return waits


def _closed(
    waits: Sequence[tuple[float, float | None]], record: CallRecord, last: float
) -> tuple[Interval, ...]:
    """`waits` with an unanswered one ended when the call went on (or was last seen)."""
    until = next(
        (t for t in (record.running_at, record.finished_at) if t is not None), last
    )
    return tuple((lo, hi if hi is not None else max(lo, until)) for lo, hi in waits)


def _group(
    run: int,
    iteration: int,
    calls: list[CallRecord],
    model: ModelCallRecord | None,
    last: float,
    flagged: Mapping[tuple[int, str], Sequence[StoredViolation]],
    asks: _Asks,
) -> IterationGroup:
    calls.sort(key=lambda c: (c.state is CallState.DISCARDED, c.attempt, c.index))
    waits = [_closed(asks.get((c.run, c.call.ref), ()), c, last) for c in calls]
    spans = []
    for c, wait in zip(calls, waits, strict=True):
        end = c.finished_at
        if end is None and c.running_at is not None:
            end = max(
                last, c.running_at
            )  # still running when last seen: outcome unknown
        spans.append(CallSpan(c.running_at, end, c.access, wait))
    bars = tuple(
        CallBar(
            c,
            spans[i].start,
            spans[i].end,
            tuple(overlapping(spans, i)),
            tuple(violation_line(v) for v in flagged.get((c.run, c.call.ref), ())),
            waits[i],
        )
        for i, c in enumerate(calls)
    )
    stats = batch_stats(
        [
            CallSpan(c.running_at, c.finished_at, c.access, wait)
            for c, wait in zip(calls, waits, strict=True)
            if c.state is not CallState.DISCARDED
        ]
    )
    return IterationGroup(run, iteration, model, bars, stats)


def load_groups(store: SessionStore, session_id: str) -> list[IterationGroup]:
    """Every iteration of the session that called the model or a tool, in order."""
    calls = store.calls(session_id)
    models = store.model_calls(session_id)
    keys = sorted(
        {(c.run, c.iteration) for c in calls} | {(m.run, m.iteration) for m in models}
    )
    flagged = violations_by_call(stored_violations(store, session_id))
    asks = permission_waits(store, session_id)
    groups = []
    for run, iteration in keys:
        mine = [c for c in calls if (c.run, c.iteration) == (run, iteration)]
        model_calls = [m for m in models if (m.run, m.iteration) == (run, iteration)]
        last = _last_seen(
            [c for c in calls if c.run == run], [m for m in models if m.run == run]
        )
        model = model_calls[-1] if model_calls else None
        groups.append(_group(run, iteration, mine, model, last, flagged, asks))
    return groups
