"""Readiness: which calls of a batch may start now, and which a finished call frees.

The batch engine's bookkeeping of waits, kept apart from everything that runs
(no event loop, no slots, no tasks) so it can be read, and tested, alone.

A call is *ready* once three things hold: it was planned (its policy drew its
dependencies, in call order), every dependency finished, and its readiness
step (if it has one) ran. Each is a *hold* on the call; a call whose holds
reach zero enters the ready heap, from which the lowest index comes out first.

Contract, each part tested with hypothesis (tests/scheduling/test_readiness.py):

* a call becomes ready exactly when it is planned and prepared and all its
  dependencies finished, never before, and once only;
* ready calls come out lowest index first (`first`, `take`);
* nothing is released twice: finishing a call again, or preparing a call that
  had no readiness step or was already prepared, changes nothing;
* a finished call never comes out (one answered while it was ready, or before
  it was planned, is skipped), and a call planned after it does not wait for it.

Loop affinity: none (plain Python state); the batch uses it from one loop.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable
from typing import final

from ._gate import CallPlan
from ._policies import Planner

__all__ = ["Readiness"]

_FINISHED = -1
"""The holds of a finished call: it never becomes ready again."""


@final
class Readiness:
    """The plans, dependency counts, dependents, preparedness and ready heap of one batch.

    Calls are numbered by their place in the batch (`add` appends). Each call
    starts with one hold for "not planned yet" and, after `needs_preparing`,
    one for its readiness step; planning replaces the first with one hold per
    unfinished dependency; `prepared` and each dependency's `finish` drop one.
    """

    __slots__ = (
        "_dependents",
        "_holds",
        "_planner",
        "_ready",
        "_unprepared",
        "planned",
        "plans",
    )

    def __init__(self, planner: Planner) -> None:
        self._planner = planner
        self.plans: list[CallPlan] = []
        """Every call's plan, in call order: what the planner draws from."""
        self._holds: list[int] = []
        self._dependents: list[list[int] | None] = []
        self._ready: list[int] = []  # a heap of ready indices not yet taken
        self._unprepared: set[int] = set()
        self.planned = 0
        """How many calls were planned: calls ``0 .. planned - 1``."""

    def add(self, plan: CallPlan) -> int:
        """Append a call, not planned yet; returns its index."""
        self.plans.append(plan)
        self._holds.append(1)
        self._dependents.append(None)
        return len(self._holds) - 1

    def needs_preparing(self, index: int) -> None:
        """The call at `index`, not planned yet, waits for its readiness step too.

        A no-op once the call was planned or finished, or if it already waits.
        """
        if (
            index >= self.planned
            and self._holds[index] != _FINISHED
            and index not in self._unprepared
        ):
            self._unprepared.add(index)
            self._holds[index] += 1

    def plan_through(
        self, *, final: bool, early: Callable[[CallPlan], bool] | None = None
    ) -> None:
        """Plan every call that may be planned now, in call order.

        All of them once `final` (the batch is complete); before that, while
        `early` says a call may start early, up to the first it refuses (which
        holds every later call back). A non-incremental planner is only ever
        asked with `final`.
        """
        plans, deps = self.plans, self._planner.deps
        index = self.planned
        while index < len(plans) and (
            final or (early is not None and early(plans[index]))
        ):
            self._plan(index, deps(index, plans))
            index += 1

    def _plan(self, index: int, deps: Iterable[int]) -> None:
        self.planned = index + 1
        holds = self._holds
        if holds[index] == _FINISHED:
            return  # answered before it was planned
        dependents = self._dependents
        waiting = 0
        for dep in deps:
            if holds[dep] != _FINISHED:
                waiting += 1
                waiters = dependents[dep]
                if waiters is None:
                    dependents[dep] = [index]
                else:
                    waiters.append(index)
        self._release(index, 1 - waiting)

    def replan(self, planner: Planner, again: Collection[int]) -> None:
        """Draw the waits again with a fresh `planner`, after plans changed (issue 29, item 4).

        `again`: the calls whose plan was replaced; each must be planned (or
        not yet planned), neither started nor finished. Each of them drops its
        old waits (and leaves the ready heap) and is planned anew; every other
        planned call is shown to the planner in call order, so its state is as
        if the batch had been planned with the new plans from the start, but
        keeps its waits. Calls not planned yet are planned later as usual.
        """
        self._planner = planner
        holds, dependents = self._holds, self._dependents
        for waiters in dependents:
            if waiters is not None:
                waiters[:] = [i for i in waiters if i not in again]
        self._ready = [i for i in self._ready if i not in again]
        heapq.heapify(self._ready)
        planned, plans = self.planned, self.plans
        for index in range(planned):
            deps = planner.deps(index, plans)
            if index in again:
                holds[index] = 1 + (index in self._unprepared)
                self._plan(index, deps)
        self.planned = planned

    def prepared(self, index: int) -> bool:
        """The readiness step of the call at `index` ran; True if that made it ready."""
        if index not in self._unprepared:
            return False
        self._unprepared.discard(index)
        return self._release(index, 1)

    def finish(self, index: int) -> bool:
        """The call at `index` is answered; True if that made a waiting call ready.

        Idempotent: a second finish releases nothing.
        """
        holds = self._holds
        if holds[index] == _FINISHED:
            return False
        holds[index] = _FINISHED
        self._unprepared.discard(index)
        dependents = self._dependents[index]
        if dependents is None:
            return False
        self._dependents[index] = None
        freed = False
        for dependent in dependents:
            freed |= self._release(dependent, 1)
        return freed

    def first(self) -> int:
        """The lowest ready call not yet taken, or -1 if none is ready."""
        ready, holds = self._ready, self._holds
        while ready:
            index = ready[0]
            if holds[index] != _FINISHED:
                return index
            heapq.heappop(ready)  # answered while it was ready: never comes out
        return -1

    def take(self) -> int:
        """Remove and return `first()` (which must not be -1): the call starts."""
        index = self.first()
        heapq.heappop(self._ready)
        return index

    def _release(self, index: int, count: int) -> bool:
        """Drop `count` holds of the call at `index`; True if it became ready."""
        holds = self._holds
        left = holds[index]
        if left == _FINISHED:
            return False
        left -= count
        holds[index] = left
        if left:
            return False
        heapq.heappush(self._ready, index)
        return True
