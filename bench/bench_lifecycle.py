"""Lifecycle overhead per call: ToolRunner vs a bare runner, measured side by side.

Run: python bench/bench_lifecycle.py [--calls N] [--rounds R]

The bare runner looks the tool up and awaits it; the lifecycle adds lookup
with aliases, pydantic validation, validate_input, the permission stage,
the timeout bookkeeping, output mapping and the result-size check. Rounds
alternate the two so machine noise hits both alike; the median round counts.
Target (issue 3): at most 30 us per call over the bare runner for a trivial
async tool with no hooks.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from toolweave.execution import Hooks, PreToolUseInput, ToolRunner
from toolweave.messages import ToolCall, ToolResult
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools import (
    Access,
    Concurrency,
    SessionState,
    ToolContext,
    ToolRegistry,
    tool,
)

TARGET_US = 30.0
Runner = Callable[[ToolCall], Awaitable[ToolResult]]


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def echo(text: str) -> str:
    """Return the text."""
    return text


def bare_runner(registry: ToolRegistry, state: SessionState) -> Runner:
    async def run(call: ToolCall) -> ToolResult:
        found = registry.get(call.name)
        assert found is not None
        output = await found.call(dict(call.input), ToolContext(call, state))
        return ToolResult(call.id, output)

    return run


async def per_call_us(runner: Runner, calls: list[ToolCall]) -> float:
    start = time.perf_counter()
    for call in calls:
        await runner(call)
    return (time.perf_counter() - start) / len(calls) * 1e6


async def per_batch_us(runner: Runner, registry: ToolRegistry, batches: int) -> float:
    calls = [ToolCall(f"b{i}", "echo", {"text": "hi"}) for i in range(10)]
    async with Dispatcher(ConcurrencyConfig()) as dispatcher:
        start = time.perf_counter()
        for _ in range(batches):
            await dispatcher.dispatch(calls, registry, runner)
        return (time.perf_counter() - start) / (batches * len(calls)) * 1e6


def variants(registry: ToolRegistry, state: SessionState) -> dict[str, Runner]:
    hooks = Hooks()

    @hooks.pre_tool_use("echo")
    def noop_hook(data: PreToolUseInput) -> None:
        return None

    return {
        "bare": bare_runner(registry, state),
        "lifecycle": ToolRunner(registry, state=state),
        "lifecycle+events": ToolRunner(registry, state=state, on_event=lambda e: None),
        "lifecycle+1 hook": ToolRunner(registry, state=state, hooks=hooks),
    }


async def measure(calls_per_round: int, rounds: int) -> dict[str, float]:
    registry = ToolRegistry([echo])
    state = SessionState(results_dir=Path(tempfile.mkdtemp()))
    runners = variants(registry, state)
    calls = [ToolCall(f"c{i}", "echo", {"text": "hi"}) for i in range(calls_per_round)]
    samples: dict[str, list[float]] = {name: [] for name in runners}
    batch_samples: dict[str, list[float]] = {"bare": [], "lifecycle": []}
    for runner in runners.values():  # warm up
        await per_call_us(runner, calls[:200])
    for _ in range(rounds):
        for name, runner in runners.items():
            samples[name].append(await per_call_us(runner, calls))
        for name in batch_samples:
            batch_samples[name].append(
                await per_batch_us(runners[name], registry, calls_per_round // 50)
            )
    out = {name: statistics.median(values) for name, values in samples.items()}
    out.update(
        {f"dispatch {k}": statistics.median(v) for k, v in batch_samples.items()}
    )
    return out


def report(backend: str, medians: dict[str, float]) -> bool:
    bare = medians["bare"]
    print(f"\n== {backend} ==  (median per call over rounds, us)")
    for name, value in medians.items():
        base = medians["dispatch bare"] if name.startswith("dispatch") else bare
        print(
            f"  {name:<22} {value:8.2f} us   x{value / base:5.2f}   +{value - base:6.2f} us"
        )
    overhead = medians["lifecycle"] - bare
    met = overhead <= TARGET_US
    verdict = "MET" if met else "NOT MET"
    print(
        f"  lifecycle overhead: {overhead:.2f} us/call (target <= {TARGET_US:g} us): {verdict}"
    )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5_000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds")
    args = parser.parse_args()
    all_met = True
    for backend in ("asyncio", "trio"):
        medians = anyio.run(measure, args.calls, args.rounds, backend=backend)
        all_met = report(backend, medians) and all_met
    print(f"\ntarget {'met' if all_met else 'NOT met'} on every backend")


if __name__ == "__main__":
    main()
