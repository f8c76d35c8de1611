"""Scheduling policies: which earlier calls each call must wait for.

Every policy reduces to a dependency graph over the batch in call order: call i
may start once the calls in `deps(i)` have finished. Dependencies always point
to earlier calls, so no policy can deadlock and every schedule is
serial-equivalent for the conflicts it knows about.

| policy          | rule                                                              |
|-----------------|-------------------------------------------------------------------|
| all_or_nothing  | no edges if every call is parallel-ok, else a chain               |
| partition       | runs of parallel-ok calls between exclusive ones (Claude Code)    |
| rwlock          | parallel-ok = shared, else exclusive; write-preferring (Codex)    |
| conflict        | an edge only where Access conflicts (ours)                        |

A call that provably runs nothing (`CallPlan.runs_nothing`: an unknown tool or
input that fails its schema) is no one's dependency: it never splits or
serializes a batch. It waits only for the last earlier barrier (an exclusive
call, under `partition`/`rwlock`/`all_or_nothing`): a barrier's context
modifier may change the toolset (register the unknown name, re-register the
tool whose schema refused the input), and serially the call would be looked up
after it (issue 29, item 4). A batch with no barrier, or no such call, pays
nothing for this. A call of a known tool that declares it touches nothing
(`Access()`) still overlaps a barrier under `conflict` (issue 13): if the
barrier re-registers that very name, the call ran as the tool it was
classified by, and the scheduler's warning names it (`_toolset`).

Under every policy a call waits for its dependencies *outside* the slots: it
takes a slot (and fires `on_started`) only once it is ready, so a waiting call
never starves another session (issue 13, item 5). `partition` and `rwlock` draw
the same graph, so they now schedule alike; both names stay, for the harnesses
they come from, Claude Code and Codex (a partition batch boundary and a
write-preferring FIFO gate are the same waits).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..tools import keys_overlap
from ._config import PolicyName
from ._gate import CallPlan

__all__ = ["Planner", "Plans", "new_planner"]


class Plans(Protocol):
    """The batch's plans so far, in call order (a list will do)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> CallPlan: ...

    def __iter__(self) -> Iterator[CallPlan]: ...


class Planner(Protocol):
    """Builds one batch's dependency graph as its calls arrive."""

    incremental: bool
    """True if `deps(i)` can be known before the batch is complete."""

    def deps(self, index: int, plans: Plans) -> tuple[int, ...]:
        """Earlier calls that must finish before call `index` starts.

        Called once per call, in call order. A non-incremental planner is only
        called once `plans` holds the whole batch.
        """
        ...


class _AllOrNothing:
    incremental = False

    def __init__(self) -> None:
        self._parallel: bool | None = None
        self._last = -1

    def deps(self, index: int, plans: Plans) -> tuple[int, ...]:
        if self._parallel is None:
            self._parallel = all(p.parallel_ok for p in plans)
        if self._parallel:
            return ()
        last = self._last
        if plans[index].runs_nothing:  # after the chain so far; not in it
            return (last,) if last >= 0 else ()
        self._last = index
        return (last,) if last >= 0 else ()


class _SharedExclusive:
    """Parallel-ok calls share the gate; the rest hold it alone, in FIFO order."""

    incremental = True

    def __init__(self) -> None:
        self._last_exclusive = -1
        self._shared_since: list[int] = []

    def deps(self, index: int, plans: Plans) -> tuple[int, ...]:
        last = self._last_exclusive
        if plans[index].runs_nothing:
            return (last,) if last >= 0 else ()
        if plans[index].parallel_ok:
            self._shared_since.append(index)
            return (last,) if last >= 0 else ()
        waits_for = tuple(self._shared_since) or ((last,) if last >= 0 else ())
        self._last_exclusive = index
        self._shared_since = []
        return waits_for


class _Conflict:
    """Wait only for earlier calls whose Access conflicts with this one."""

    incremental = True

    def __init__(self) -> None:
        self._reads: list[tuple[int, str]] = []
        self._writes: list[tuple[int, str]] = []
        self._barrier = -1

    def deps(self, index: int, plans: Plans) -> tuple[int, ...]:
        plan = plans[index]
        access = plan.access
        if not access.writes:
            if not access.reads:  # touches nothing shared
                barrier = self._barrier  # its lookup may: after a barrier's change
                return (barrier,) if plan.runs_nothing and barrier >= 0 else ()
            if not self._writes:  # a read, and nothing earlier writes: no wait
                for key in access.reads:
                    self._reads.append((index, key))
                return ()
        touched = access.reads + access.writes
        found: set[int] = set()
        if self._writes:
            found.update(
                j
                for j, key in self._writes
                if any(keys_overlap(key, t) for t in touched)
            )
        if access.writes and self._reads:
            found.update(
                j
                for j, key in self._reads
                if any(keys_overlap(key, w) for w in access.writes)
            )
        if access.writes and access.is_barrier:
            # Everything earlier that touched anything is now a dependency of this
            # call, so later calls need only wait for the barrier itself.
            self._reads, self._writes = [], [(index, "*")]
            self._barrier = index
        else:
            for key in access.reads:
                self._reads.append((index, key))
            for key in access.writes:
                self._writes.append((index, key))
        return tuple(sorted(found)) if found else ()


def new_planner(policy: PolicyName) -> Planner:
    """A fresh planner for one batch under `policy`."""
    if policy == "all_or_nothing":
        return _AllOrNothing()
    if policy == "partition":
        return _SharedExclusive()
    if policy == "rwlock":
        return _SharedExclusive()
    return _Conflict()
