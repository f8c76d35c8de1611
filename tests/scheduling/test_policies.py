from __future__ import annotations

import toolweave as tw
from toolweave.scheduling import CallPlan
from toolweave.scheduling._policies import new_planner


def _p(
    safe: bool, reads: tuple[str, ...] = (), writes: tuple[str, ...] = ()
) -> CallPlan:
    access = (
        tw.Access(reads, writes)
        if (reads or writes)
        else (tw.Access.read_all() if safe else tw.Access.barrier())
    )
    return CallPlan(None, None, safe, access)


def _graph(policy: str, plans: list[CallPlan]) -> list[tuple[int, ...]]:
    planner = new_planner(policy)  # type: ignore[arg-type]
    return [planner.deps(i, plans) for i in range(len(plans))]


R, W = _p(True), _p(False)


def test_all_or_nothing_parallel_only_when_every_call_is_safe() -> None:
    assert _graph("all_or_nothing", [R, R, R]) == [(), (), ()]
    assert _graph("all_or_nothing", [R, W, R]) == [(), (0,), (1,)]
    assert _graph("all_or_nothing", [R]) == [()]


def test_partition_groups_consecutive_safe_calls() -> None:
    assert _graph("partition", [R, R, W, R, R, W, W]) == [
        (),
        (),
        (0, 1),
        (2,),
        (2,),
        (3, 4),
        (5,),
    ]


def test_rwlock_is_write_preferring_fifo() -> None:
    # seed 001: a read arriving behind a queued write waits for it,
    # even though it is compatible with the read still running.
    graph = _graph("rwlock", [R, W, R])
    assert graph == [(), (0,), (1,)]


def test_conflict_waits_only_for_conflicting_earlier_calls() -> None:
    ra = _p(True, reads=("fs:/a",))
    rb = _p(True, reads=("fs:/b",))
    wa = _p(False, writes=("fs:/a",))
    wdir = _p(False, writes=("fs:/",))
    nothing = CallPlan(None, None, False, tw.Access())
    assert _graph("conflict", [ra, rb, wa, rb, ra]) == [(), (), (0,), (), (2,)]
    assert _graph("conflict", [ra, rb, wdir, nothing, rb]) == [(), (), (0, 1), (), (2,)]


def test_conflict_barrier_collapses_history() -> None:
    ra = _p(True, reads=("fs:/a",))
    graph = _graph("conflict", [ra, ra, W, ra, W])
    assert graph == [(), (), (0, 1), (2,), (2, 3)]


def test_conflict_is_never_more_constrained_than_rwlock() -> None:
    ra = _p(True, reads=("fs:/a",))
    wb = _p(False, writes=("fs:/b",))
    conflict = _graph("conflict", [ra, wb, ra])
    rwlock = _graph("rwlock", [ra, wb, ra])
    assert conflict == [(), (), ()]
    assert rwlock == [(), (0,), (1,)]
