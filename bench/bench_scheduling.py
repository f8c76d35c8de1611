"""Scheduling benchmark (issue: the scheduling core). One command, ratios side by side.

(a) orchestration overhead per call, 1 / 8 / 500 trivial calls, async and sync tools
    (and async with an interrupt token, as the agent loop dispatches), beside a bare
    asyncio.gather floor running the same runner;
(b) 8 calls of 50 ms, async and sync: wall / ideal;
(c) every policy's makespan on a seeded mix of 1,000 coding-agent batches against the
    dependency-graph lower bound (virtual time, trio MockClock).

Run: python bench/bench_scheduling.py
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from typing import Any

import anyio
import trio
import trio.testing

import toolweave as tw
from toolweave.cli.demo import lower_bound, random_batch, run_simulated_batch
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
async def noop(i: int) -> int:
    """The noop test tool."""
    return i


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
def sync_noop(i: int) -> int:
    """The sync_noop test tool."""
    return i


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
async def sleepy(i: int) -> int:
    """The sleepy test tool."""
    await anyio.sleep(0.05)
    return i


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
def sync_sleepy(i: int) -> int:
    """The sync_sleepy test tool."""
    time.sleep(0.05)  # noqa: TID251 - a blocking tool is the point
    return i


REGISTRY = tw.ToolRegistry([noop, sync_noop, sleepy, sync_sleepy])


async def runner(call: tw.ToolCall) -> tw.ToolResult:
    t = REGISTRY.get(call.name)
    assert t is not None
    return tw.ToolResult(
        call.id, str(await t.call(t.parse(call.input), tw.ToolContext(call)))
    )


def _calls(name: str, n: int) -> list[tw.ToolCall]:
    return [tw.ToolCall(f"c{i}", name, {"i": i}) for i in range(n)]


async def _best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return min(times)


async def overhead(name: str, n: int, token: bool = False) -> tuple[float, float]:
    calls = _calls(name, n)
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=max(n, 10)))

    async def ours() -> None:
        # token: the agent loop's path (an interrupt token makes cancels selective)
        interrupt = InterruptToken() if token else None
        await dispatcher.dispatch(calls, REGISTRY, runner, interrupt=interrupt)

    async def floor() -> None:
        await asyncio.gather(*(runner(c) for c in calls))  # noqa: TID251 - the floor

    repeat = 200 if n < 100 else 30
    for _ in range(3):  # warm both
        await ours()
        await floor()
    return await _best(ours, repeat), await _best(floor, repeat)


async def part_a() -> list[str]:
    lines = [
        "(a) orchestration per batch: toolweave vs bare asyncio.gather of the same runner"
    ]
    for name, token in (("noop", False), ("sync_noop", False), ("noop", True)):
        for n in (1, 8, 500):
            ours, floor = await overhead(name, n, token)
            label = name + ("+token" if token else "")
            extra = (ours - floor) / n * 1e6
            verdict = ""
            if n == 500:
                verdict = "  target <= 2x: " + (
                    "met" if ours / floor <= 2 else "NOT met"
                )
            lines.append(
                f"    {label:10s} n={n:3d}: {ours * 1e3:8.3f} ms vs {floor * 1e3:8.3f} ms"
                f"  ratio {ours / floor:5.2f}x  (+{extra:6.1f} us/call){verdict}"
            )
    return lines


async def part_b() -> list[str]:
    lines = ["(b) 8 calls of 50 ms: wall / ideal (ideal = 50 ms)"]
    for name in ("sleepy", "sync_sleepy"):
        dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=8))
        calls = _calls(name, 8)
        await dispatcher.dispatch(calls, REGISTRY, runner)
        walls = []
        for _ in range(10):
            start = time.perf_counter()
            await dispatcher.dispatch(calls, REGISTRY, runner)
            walls.append(time.perf_counter() - start)
        best, median = min(walls), statistics.median(walls)
        target = 1.05 if name == "sleepy" else 1.10
        lines.append(
            f"    {name:11s}: best {best / 0.05:5.3f}x  median {median / 0.05:5.3f}x"
            f"  (target <= {target}x: {'met' if best / 0.05 <= target else 'NOT met'})"
        )
    return lines


POLICIES = ["all_or_nothing", "partition", "rwlock", "conflict"]


async def _part_c_async() -> list[str]:
    rng = random.Random(20261129)
    batches = [random_batch(rng) for _ in range(1000)]
    totals = dict.fromkeys(["serial", "bound", *POLICIES], 0.0)
    conflict_at_bound = 0
    conflict_never_slower = 0
    for batch in batches:
        bound = lower_bound(batch)
        totals["bound"] += bound
        totals["serial"] += sum(c.duration for c in batch)
        spans = {}
        for policy in POLICIES:
            makespan, _ = await run_simulated_batch(
                batch, ConcurrencyConfig(policy=policy)
            )  # type: ignore[arg-type]
            spans[policy] = makespan
            totals[policy] += makespan
        conflict_at_bound += abs(spans["conflict"] - bound) < 1e-9
        conflict_never_slower += all(
            spans["conflict"] <= spans[p] + 1e-9 for p in POLICIES
        )
    lines = [
        "(c) 1,000 seeded coding-agent batches (virtual time): total makespan / lower bound"
    ]
    for key in ["serial", *POLICIES]:
        lines.append(f"    {key:15s} {totals[key] / totals['bound']:6.3f}x")
    lines.append(
        f"    conflict == lower bound on {conflict_at_bound}/1000 batches;"
        f" never slower than another policy on {conflict_never_slower}/1000"
    )
    return lines


def part_c() -> list[str]:
    return trio.run(_part_c_async, clock=trio.testing.MockClock(autojump_threshold=0))


def main() -> None:
    for line in (
        asyncio.run(part_a())
        + asyncio.run(part_b())
        + (part_c() if "--skip-c" not in sys.argv else [])
    ):
        print(line, flush=True)


if __name__ == "__main__":
    main()
