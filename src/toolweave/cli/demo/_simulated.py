"""Simulated coding-agent tools: honest declarations, fake work (a sleep).

Used by `toolweave demo --schedules` and by the scheduling benchmark to compare
policies on batches shaped like a coding agent's, against serial execution and
against the dependency lower bound.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ...messages import ToolCall, ToolResult
from ...scheduling import ConcurrencyConfig, Dispatcher, dependency_bound
from ...tools import Access, Concurrency, Tool, ToolContext, ToolRegistry, tool

__all__ = [
    "SimCall",
    "Span",
    "lower_bound",
    "random_batch",
    "run_simulated_batch",
    "sim_registry",
]

ROOT = "/work"


@dataclass(frozen=True, slots=True)
class SimCall:
    """One simulated call: which tool, on what, for how long (seconds)."""

    name: str
    target: str
    duration: float
    readonly: bool = True

    def to_call(self, index: int) -> ToolCall:
        args: dict[str, Any] = {"target": self.target, "duration": self.duration}
        if self.name == "bash":
            args["readonly"] = self.readonly
        return ToolCall(f"call_{index}", self.name, args)

    @property
    def label(self) -> str:
        return f"{self.name} {self.target}"


@dataclass(slots=True)
class Span:
    """When a call ran, relative to the batch start."""

    start: float
    end: float = 0.0
    result: ToolResult | None = field(default=None, repr=False)


def _fs(target: str) -> str:
    return f"fs:{ROOT}/{target}".rstrip("/")


def sim_registry() -> ToolRegistry:
    """read/grep (SAFE, read their path), edit (writes its file), bash (SAFE iff read-only)."""

    async def work(duration: float) -> str:
        await anyio.sleep(duration)
        return "ok"

    @tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(reads=[_fs(a["target"])])
    )
    async def read(target: str, duration: float) -> str:
        """Simulated read of `target`: sleeps `duration` seconds."""
        return await work(duration)

    @tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(reads=[_fs(a["target"])])
    )
    async def grep(target: str, duration: float) -> str:
        """Simulated search of `target`: sleeps `duration` seconds."""
        return await work(duration)

    @tool(access=lambda a: Access(writes=[_fs(a["target"])]))
    async def edit(target: str, duration: float) -> str:
        """Simulated edit of `target`: sleeps `duration` seconds."""
        return await work(duration)

    def bash_access(a: dict[str, Any]) -> Access:
        return Access(reads=[_fs("")]) if a["readonly"] else Access.barrier()

    @tool(concurrency=lambda a: bool(a["readonly"]), access=bash_access)
    async def bash(target: str, duration: float, readonly: bool = True) -> str:
        """Simulated command: read-only or not, sleeps `duration` seconds."""
        return await work(duration)

    tools: list[Tool] = [read, grep, edit, bash]
    return ToolRegistry(tools)


def lower_bound(batch: Sequence[SimCall]) -> float:
    """The dependency-graph lower bound of `batch` (see `dependency_bound`)."""
    registry = sim_registry()
    accesses: list[Access] = []
    for i, sim in enumerate(batch):
        call = sim.to_call(i)
        t = registry.get(call.name)
        assert t is not None
        accesses.append(t.access_for(t.parse(call.input)) or Access.barrier())
    return dependency_bound(accesses, [sim.duration for sim in batch])


async def run_simulated_batch(
    batch: Sequence[SimCall], config: ConcurrencyConfig
) -> tuple[float, list[Span]]:
    """Run `batch` through a fresh Dispatcher; return the makespan and each call's span."""
    registry = sim_registry()
    calls = [sim.to_call(i) for i, sim in enumerate(batch)]
    spans: dict[str, Span] = {}
    origin = anyio.current_time()

    async def runner(call: ToolCall) -> ToolResult:
        span = spans[call.id] = Span(anyio.current_time() - origin)
        t = registry.get(call.name)
        assert t is not None
        out = await t.call(t.parse(call.input), ToolContext(call))
        span.end = anyio.current_time() - origin
        span.result = ToolResult(call.id, str(out))
        return span.result

    async with Dispatcher(config) as dispatcher:
        await dispatcher.dispatch(calls, registry, runner)
    makespan = anyio.current_time() - origin
    return makespan, [spans.get(c.id, Span(0.0, 0.0)) for c in calls]


def random_batch(rng: random.Random) -> list[SimCall]:
    """A batch shaped like a coding agent's: mostly reads and greps, some edits and shell."""
    files = [f"src/m{i}.py" for i in range(6)]
    batch: list[SimCall] = []
    for _ in range(rng.randint(2, 8)):
        roll = rng.random()
        duration = round(rng.uniform(0.01, 0.2), 3)
        if roll < 0.45:
            batch.append(SimCall("read", rng.choice(files), duration))
        elif roll < 0.65:
            batch.append(
                SimCall("grep", rng.choice(["src", "src/m1.py", "tests"]), duration)
            )
        elif roll < 0.85:
            batch.append(SimCall("edit", rng.choice(files), duration))
        else:
            batch.append(
                SimCall("bash", "git status", duration, readonly=rng.random() < 0.6)
            )
    return batch
