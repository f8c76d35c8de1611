"""Entry points for manifest tests, whose runs the test controls by rendezvous.

A manifest names ``manifest_probe:step``; each call enters, records which calls
are inside with it, and waits on its gate until the test releases it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio


class Probe:
    """Records entries, exits and overlaps; holds every call on its own gate."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.running: set[str] = set()
        self.overlaps: set[frozenset[str]] = set()
        self.peak = 0
        self._gates: dict[str, anyio.Event] = {}

    def gate(self, key: str) -> anyio.Event:
        return self._gates.setdefault(key, anyio.Event())

    async def step(self, key: str) -> str:
        self.overlaps.update(frozenset({key, other}) for other in self.running)
        self.running.add(key)
        self.peak = max(self.peak, len(self.running))
        self.log.append(f"start {key}")
        try:
            await self.gate(key).wait()
        finally:
            self.running.discard(key)
            self.log.append(f"end {key}")
        return f"did {key}"

    def release_running(self) -> int:
        inside = list(self.running)
        for key in inside:
            self.gate(key).set()
        return len(inside)

    def overlapped_with(self, key: str) -> set[str]:
        return {k for pair in self.overlaps if key in pair for k in pair} - {key}

    async def drive(self, work: Callable[[], Awaitable[object]]) -> None:
        """Run `work`, releasing all calls inside whenever everything is blocked.

        Calls the schedule lets overlap are all inside at the same quiescent
        point, so the recorded overlaps are exactly those the schedule allows.
        """
        done = anyio.Event()

        async def run() -> None:
            await work()
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            while True:
                await anyio.wait_all_tasks_blocked()
                if done.is_set():
                    break
                if self.release_running() == 0:
                    # Nothing inside: let a call being admitted (or the batch
                    # finishing) make progress. A real hang hits the test timeout.
                    await anyio.sleep(0.001)


PROBE = Probe()


async def step(key: str) -> str:
    """The manifest entry point: one controlled step of the current probe."""
    return await PROBE.step(key)


def add(a: int, b: int = 1) -> int:
    """A sync entry point (runs on a worker thread)."""
    return a + b


async def shout(text: str) -> str:
    """An async entry point."""
    if text == "fail":
        raise RuntimeError("asked to fail")
    return text.upper()
