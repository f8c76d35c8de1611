"""The readiness table alone: no event loop, no slots, no tasks.

`Readiness` is checked against a reference model (plain sets, recomputed from
scratch at every step) under random interleavings of its whole interface:
calls added, readiness steps required and run, planning (final or early, a
refused call holding back the rest), calls finished (in any order, twice,
before they were planned, while they sat ready) and calls taken. At every step
the ready calls and the lowest of them must be the model's, and each return
value must say exactly what the step changed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from toolweave.scheduling._config import PolicyName
from toolweave.scheduling._gate import CallPlan
from toolweave.scheduling._policies import new_planner
from toolweave.scheduling._readiness import Readiness
from toolweave.tools import Access


class _DrawnPlanner:
    """A planner whose dependencies are whatever the test drew for each call.

    `deps` is asked once per call, in call order, as the batch's planners are;
    asking twice or out of order is a defect of the table.
    """

    incremental = True

    def __init__(self) -> None:
        self.drawn: list[tuple[int, ...]] = []
        self.asked: list[int] = []

    def deps(self, index: int, plans: Sequence[CallPlan]) -> tuple[int, ...]:
        assert index == len(self.asked), "deps asked out of call order, or twice"
        assert len(plans) > index
        self.asked.append(index)
        return self.drawn[index]


def _plan(early: bool) -> CallPlan:
    # `parallel_ok` stands for "may start early" in these tests (see `_early`).
    return CallPlan(None, None, early, Access())


def _early(plan: CallPlan) -> bool:
    return plan.parallel_ok


class ReadinessModel(RuleBasedStateMachine):
    """The table beside the model: which calls are planned, prepared, finished, taken."""

    def __init__(self) -> None:
        super().__init__()
        self.planner = _DrawnPlanner()
        self.table = Readiness(self.planner)
        self.early: list[bool] = []
        self.unprepared: set[int] = set()
        self.finished: set[int] = set()
        self.taken: set[int] = set()

    # -- the model -------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.early)

    def ready(self) -> set[int]:
        """Planned, prepared, every dependency finished, not finished, not taken."""
        return {
            index
            for index in range(self.table.planned)
            if index not in self.unprepared
            and index not in self.finished
            and index not in self.taken
            and all(dep in self.finished for dep in self.planner.drawn[index])
        }

    # -- the interface, at random ---------------------------------------------

    @rule(early=st.booleans(), data=st.data())
    def add(self, early: bool, data: st.DataObject) -> None:
        index = self.size
        earlier = st.integers(0, index - 1) if index else st.nothing()
        drawn = st.lists(earlier, max_size=4 if index else 0, unique=True)
        deps = data.draw(drawn, label="deps")
        self.planner.drawn.append(tuple(deps))
        self.early.append(early)
        assert self.table.add(_plan(early)) == index

    @precondition(lambda self: self.size > 0)
    @rule(data=st.data())
    def needs_preparing(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, self.size - 1), label="index")
        self.table.needs_preparing(index)
        if index >= self.table.planned and index not in self.finished:
            self.unprepared.add(index)  # a no-op once planned or finished

    @precondition(lambda self: self.size > 0)
    @rule(data=st.data())
    def prepared(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, self.size - 1), label="index")
        before = self.ready()
        made_ready = self.table.prepared(index)
        self.unprepared.discard(index)
        assert made_ready == (self.ready() - before == {index})
        assert self.ready() - before <= {index}

    @rule(final=st.booleans())
    def plan_through(self, final: bool) -> None:
        expected = self.table.planned
        while expected < self.size and (final or self.early[expected]):
            expected += 1
        self.table.plan_through(final=final, early=_early)
        assert self.table.planned == expected

    @rule()
    def plan_nothing_early_without_a_predicate(self) -> None:
        before = self.table.planned
        self.table.plan_through(final=False, early=None)
        assert self.table.planned == before

    @precondition(lambda self: self.size > 0)
    @rule(data=st.data())
    def finish(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, self.size - 1), label="index")
        before = self.ready()
        freed = self.table.finish(index)
        self.finished.add(index)
        self.unprepared.discard(index)
        newly = self.ready() - before
        assert freed == bool(newly)
        assert all(index in self.planner.drawn[other] for other in newly)

    @precondition(lambda self: self.table.first() >= 0)
    @rule()
    def take(self) -> None:
        expected = min(self.ready())
        assert self.table.take() == expected
        self.taken.add(expected)

    # -- after every step ----------------------------------------------------------

    @invariant()
    def the_lowest_ready_call_comes_first(self) -> None:
        ready = self.ready()
        assert self.table.first() == (min(ready) if ready else -1)

    @invariant()
    def each_call_was_planned_once_in_order(self) -> None:
        assert self.planner.asked == list(range(self.table.planned))

    def teardown(self) -> None:
        """Drained: every ready call comes out once, lowest first, then nothing."""
        out = []
        while self.table.first() >= 0:
            out.append(self.table.take())
        assert out == sorted(self.ready())
        assert self.table.first() == -1


TestReadinessModel = ReadinessModel.TestCase


@pytest.mark.parametrize(
    "policy", ["all_or_nothing", "partition", "rwlock", "conflict"]
)
@given(
    order=st.permutations(range(8)),
    kinds=st.lists(
        st.sampled_from(["read", "write", "barrier"]), min_size=8, max_size=8
    ),
)
def test_finishing_in_any_order_starts_every_call_once_after_its_dependencies(
    policy: PolicyName, order: list[int], kinds: list[str]
) -> None:
    """With the real planners: the calls come out as a valid serial-equivalent order.

    Each call is taken only once every call the planner made it wait for is
    finished, no call comes out twice, and every call comes out.
    """
    access = {
        "read": Access(reads=("k",)),
        "write": Access(writes=("k",)),
        "barrier": Access.barrier(),
    }
    plans = [CallPlan(None, None, kind == "read", access[kind]) for kind in kinds]
    planner = new_planner(policy)
    table = Readiness(planner)
    for plan in plans:
        table.add(plan)
    table.plan_through(final=True)
    deps = [set(new_planner(policy).deps(i, plans)) for i in range(len(plans))]
    finished: set[int] = set()
    started: list[int] = []
    pending = list(order)  # the order in which started calls finish
    while len(finished) < len(plans):
        while table.first() >= 0:
            index = table.take()
            assert deps[index] <= finished
            started.append(index)
        running = [i for i in pending if i in started and i not in finished]
        assert running, "no call is ready and none is running: a deadlock"
        finished.add(running[0])
        table.finish(running[0])
    assert sorted(started) == list(range(len(plans)))


def test_a_call_answered_before_it_was_planned_is_never_ready_nor_waited_for() -> None:
    planner = _DrawnPlanner()
    planner.drawn = [(), (0,)]
    table = Readiness(planner)
    table.add(_plan(False))
    table.add(_plan(False))
    assert table.finish(0) is False  # nobody waits for it yet
    table.plan_through(final=True)
    assert table.first() == 1  # planned after 0 finished: does not wait for it
    assert table.finish(0) is False  # a second finish releases nothing
    assert table.take() == 1
    assert table.first() == -1


def test_a_readiness_step_holds_a_call_until_it_ran_and_only_then() -> None:
    planner = _DrawnPlanner()
    planner.drawn = [()]
    table = Readiness(planner)
    table.add(_plan(True))
    table.needs_preparing(0)
    table.needs_preparing(0)  # already waits: one hold, not two
    table.plan_through(final=True)
    assert table.first() == -1
    assert table.prepared(0) is True
    assert table.prepared(0) is False  # a second report changes nothing
    assert table.take() == 0
