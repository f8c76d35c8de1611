"""The r, r, W, r, r scenario every framework is tested with, proved by rendezvous.

Calls: read a (pair 1), read b (pair 1), write W, read c (pair 2), read d (pair 2),
all on one resource. Under toolweave's ``conflict`` policy the two reads of a
pair must be inside at once (each waits at its pair's rendezvous, so a
schedule that does not overlap them fails with a timeout instead of passing),
W must start only after both earlier reads ended and see nobody else while it
runs, and the later reads must start only after W ended.
"""

from __future__ import annotations

import threading
from collections import defaultdict

import anyio

from toolweave import Access, Concurrency
from toolweave.integrations import Declaration

RENDEZVOUS_TIMEOUT = 10.0
"""Deadlock guard only: a pair that never meets fails the test instead of hanging."""

PAIRS = {"a": 1, "b": 1, "c": 2, "d": 2}
SCENARIO = [("read", "a"), ("read", "b"), ("write", "W"), ("read", "c"), ("read", "d")]

DECLARATIONS = {
    "read": Declaration(concurrency=Concurrency.SAFE, access=Access(reads=("db",))),
    "write": Declaration(
        concurrency=Concurrency.SEQUENTIAL, access=Access(writes=("db",))
    ),
}


class Probe:
    """Records starts and ends; reads meet their pair, the write checks it is alone."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []
        self.inside: set[str] = set()
        self.alone: list[bool] = []
        self._lock = threading.Lock()
        self._arrived: dict[int, int] = defaultdict(int)
        self._met: dict[int, anyio.Event] = {}
        self._barriers = {1: threading.Barrier(2), 2: threading.Barrier(2)}

    def _enter(self, name: str) -> None:
        with self._lock:
            self.log.append(("start", name))
            self.inside.add(name)

    def _leave(self, name: str) -> None:
        with self._lock:
            self.inside.discard(name)
            self.log.append(("end", name))

    async def read(self, name: str) -> str:
        """Wait until the other read of the pair is inside too (async tools)."""
        self._enter(name)
        pair = PAIRS[name]
        met = self._met.setdefault(pair, anyio.Event())
        self._arrived[pair] += 1
        if self._arrived[pair] == 2:
            met.set()
        with anyio.fail_after(RENDEZVOUS_TIMEOUT):
            await met.wait()
        self._leave(name)
        return f"value of {name}"

    def read_sync(self, name: str) -> str:
        """The same for sync tools on worker threads."""
        self._enter(name)
        self._barriers[PAIRS[name]].wait(timeout=RENDEZVOUS_TIMEOUT)
        self._leave(name)
        return f"value of {name}"

    async def write(self, name: str) -> str:
        """Check nobody else is inside, after every other task got the chance to start."""
        self._enter(name)
        await anyio.wait_all_tasks_blocked()
        self.alone.append(self.inside == {name})
        self._leave(name)
        return f"wrote {name}"

    def write_sync(self, name: str) -> str:
        self._enter(name)
        self.alone.append(self.inside == {name})
        self._leave(name)
        return f"wrote {name}"

    def check(self) -> None:
        """Reads of a pair overlapped (both started before either ended), W ran alone."""
        at = {event: i for i, event in enumerate(self.log)}
        assert len(self.log) == 10, self.log
        for first, second in (("a", "b"), ("c", "d")):
            assert max(at["start", first], at["start", second]) < min(
                at["end", first], at["end", second]
            )
        assert at["start", "W"] > max(at["end", "a"], at["end", "b"])
        assert at["end", "W"] < min(at["start", "c"], at["start", "d"])
        assert self.alone == [True]


def _text_key(args: dict[str, object]) -> str:
    return f"text:{args['text']}"  # KeyError on a call without "text": fail closed


FRAGILE_DECLARATION = Declaration(
    concurrency=lambda args: Concurrency.SAFE if _text_key(args) else False,
    access=lambda args: Access(reads=(_text_key(args),)),
)
"""An input-dependent declaration that raises on calls without a "text" argument.

The fidelity tables run every scenario with it: a declaration that raises must
only make the call a barrier, never change what the framework answers.
"""
