"""Batch arithmetic: makespan, serial time and the dependency lower bound.

`batch_stats` / `dependency_bound` / `overlapping` are pure functions of
recorded spans (moved here from tests/cli: they are the scheduler's
arithmetic, not the CLI's). Small hand-checked cases pin the exact figures;
a hypothesis property checks, for schedules that keep the serial transcript
(each call starts after every earlier call it conflicts with), that
``ideal <= makespan`` always, that the as-soon-as-possible schedule reaches
the bound exactly, that running one after another takes the serial sum, and
that ``max duration <= ideal <= serial``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolweave.scheduling import (
    BatchStats,
    CallSpan,
    batch_stats,
    dependency_bound,
    overlapping,
)
from toolweave.tools import Access


@dataclass(frozen=True)
class Record:
    """A stored access record (not an `Access`): what a session store gives back."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


def _read(path: str) -> Record:
    return Record(reads=(f"fs:/w/{path}",))


def _write(path: str) -> Record:
    return Record(writes=(f"fs:/w/{path}",))


def test_the_lower_bound_is_the_longest_conflict_chain() -> None:
    spans = [
        CallSpan(0.0, 0.3, _read("a.py")),  # 0.3
        CallSpan(0.0, 0.4, _read("b.py")),  # 0.4, independent
        CallSpan(0.3, 0.55, _write("a.py")),  # waits for #0: 0.3 + 0.25
        CallSpan(0.55, 0.85, _read("a.py")),  # waits for #2: 0.85
    ]
    stats = batch_stats(spans)
    assert stats == BatchStats(
        calls=4,
        makespan=pytest.approx(0.85),
        serial=pytest.approx(1.25),
        ideal=pytest.approx(0.85),
    )
    assert stats.speedup == pytest.approx(1.25 / 0.85)


def test_an_access_and_a_stored_record_of_it_give_the_same_bound() -> None:
    as_access = [
        CallSpan(0.0, 1.0, Access(writes=["fs:/w/a"])),
        CallSpan(1.0, 3.0, Access(reads=["fs:/w/a"])),
    ]
    as_record = [
        CallSpan(0.0, 1.0, _write("a")),
        CallSpan(1.0, 3.0, _read("a")),
    ]
    assert batch_stats(as_access) == batch_stats(as_record)
    assert batch_stats(as_access).ideal == pytest.approx(3.0)


def test_a_barrier_orders_everything_and_calls_that_never_ran_cost_nothing() -> None:
    spans = [
        CallSpan(0.0, 1.0, _read("a")),
        CallSpan(1.0, 2.0, Record(writes=("*",))),  # waits for all before it
        CallSpan(2.0, 2.5, _read("b")),  # and everything after waits for it
        CallSpan(None, None, _read("c")),  # never ran
    ]
    stats = batch_stats(spans)
    assert stats.ideal == pytest.approx(2.5) and stats.serial == pytest.approx(2.5)
    assert stats.makespan == pytest.approx(2.5) and stats.unknown_access == 0
    assert spans[3].duration == 0.0
    assert CallSpan(2.0, 1.0).duration == 0.0  # a clock step back is no negative time


def test_an_access_not_recorded_is_no_conflict_and_is_counted() -> None:
    """A lower bound must not assume a conflict nobody recorded (issue 27, item 8)."""
    spans = [
        CallSpan(0.0, 1.0, _read("a")),
        CallSpan(0.0, 2.0, None),  # recorded without its access
        CallSpan(0.0, 0.5, _write("a")),
        CallSpan(None, None),  # never ran: not counted as unknown either
    ]
    stats = batch_stats(spans)
    assert stats.ideal == pytest.approx(2.0) and stats.unknown_access == 1
    empty = batch_stats([])
    assert empty == BatchStats(0, 0.0, 0.0, 0.0) and empty.speedup == 1.0


def test_a_wait_for_permission_while_nothing_runs_is_left_out() -> None:
    """A read, and an edit that waited 5.6 s for the user's y."""
    stats = batch_stats(
        [
            CallSpan(0.0, 0.1, _read("a")),
            CallSpan(5.6, 5.7, _write("b"), waits=((0.0, 5.6),)),
        ]
    )
    assert stats == BatchStats(
        calls=2,
        makespan=pytest.approx(0.2),
        serial=pytest.approx(0.2),
        ideal=pytest.approx(0.1),
        permission_wait=pytest.approx(5.6),
    )
    assert stats.speedup == pytest.approx(1.0)  # not "0.04x faster than serial"


def test_a_wait_while_another_call_runs_is_wall_time() -> None:
    stats = batch_stats(
        [
            CallSpan(0.0, 3.0, _read("a")),  # runs through the whole ask
            CallSpan(2.0, 2.5, _write("b"), waits=((0.0, 2.0),)),
        ]
    )
    assert stats.makespan == pytest.approx(3.0) and stats.permission_wait == 2.0
    assert stats.ideal == pytest.approx(3.0)


def test_overlapping_waits_count_once_and_waits_outside_the_batch_are_ignored() -> None:
    stats = batch_stats(
        [
            CallSpan(4.0, 5.0, _write("a"), waits=((1.0, 3.0), (2.0, 4.0))),
            CallSpan(5.0, 6.0, _write("b"), waits=((0.0, 0.5), (4.5, 4.5))),
            CallSpan(1.0, 2.0, _read("c")),  # the batch's first start: 1.0
        ]
    )
    # waits merge to [0, 0.5] and [1, 4] (3.5 s); inside the batch's span
    # [1, 6] only [2, 4] is idle (the read runs over [1, 2]): 6 - 1 - 2 = 3
    assert stats.permission_wait == pytest.approx(3.5)
    assert stats.makespan == pytest.approx(3.0)
    assert stats.serial == pytest.approx(3.0)


def test_overlaps_include_running_calls_up_to_now() -> None:
    spans = [
        CallSpan(0.0, 1.0),
        CallSpan(0.5, None),
        CallSpan(1.0, 2.0),
        CallSpan(None, None),
    ]
    assert overlapping(spans, 0) == []  # #1 is still running, and no "now" was given
    assert overlapping(spans, 0, now=3.0) == [1]
    assert overlapping(spans, 1, now=3.0) == [0, 2]
    assert overlapping(spans, 1) == []  # still running, no "now": no interval yet
    assert overlapping(spans, 2, now=3.0) == [1]  # touching ends do not overlap
    assert overlapping(spans, 3, now=3.0) == []


def test_the_bound_needs_one_duration_per_access() -> None:
    with pytest.raises(ValueError, match=r"shorter|longer"):
        dependency_bound([Access(), Access()], [1.0])


# -- the property ---------------------------------------------------------------

KEYS = ("a", "b", "c")
accesses = st.builds(
    Access,
    reads=st.lists(st.sampled_from(KEYS), max_size=2),
    writes=st.lists(st.sampled_from((*KEYS, "*")), max_size=1),
)
calls = st.lists(
    st.tuples(accesses, st.integers(0, 9), st.integers(0, 5)), min_size=1, max_size=8
)


def _schedule(batch: list[tuple[Access, int, int]], *, delayed: bool) -> list[CallSpan]:
    """Each call starts once every earlier conflicting call ended (+ its delay)."""
    spans: list[CallSpan] = []
    for index, (access, tenths, delay) in enumerate(batch):
        ready = max(
            (
                span.end
                for span, (other, _, _) in zip(spans, batch[:index], strict=True)
                if span.end is not None and other.conflicts_with(access)
            ),
            default=0.0,
        )
        start = ready + (delay / 10 if delayed else 0.0)
        spans.append(CallSpan(start, start + tenths / 10, access))
    return spans


@given(batch=calls)
def test_a_serial_equivalent_schedule_never_beats_the_bound(
    batch: list[tuple[Access, int, int]],
) -> None:
    durations = [tenths / 10 for _, tenths, _ in batch]
    serial = sum(durations)
    ideal = dependency_bound([a for a, _, _ in batch], durations)
    assert max(durations) - 1e-9 <= ideal <= serial + 1e-9

    asap = batch_stats(_schedule(batch, delayed=False))
    assert asap.ideal == pytest.approx(ideal) and asap.serial == pytest.approx(serial)
    assert asap.makespan <= serial + 1e-9
    if any(durations):  # an all-zero batch has no span to measure
        assert asap.makespan == pytest.approx(ideal, abs=1e-9)

    late = batch_stats(_schedule(batch, delayed=True))
    assert late.makespan >= ideal - 1e-9

    ends = 0.0
    one_by_one = []
    for access, tenths, _ in batch:
        one_by_one.append(CallSpan(ends, ends + tenths / 10, access))
        ends += tenths / 10
    chained = batch_stats(one_by_one)
    assert chained.makespan == pytest.approx(serial, abs=1e-9)
    assert chained.speedup == pytest.approx(1.0) or serial == 0
    barriers = [Access(writes=["*"]) for _ in batch]
    assert dependency_bound(barriers, durations) == pytest.approx(serial)
