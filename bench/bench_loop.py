"""Agent-loop overhead and streaming overlap, each beside its floor in the same run.

Run: python bench/bench_loop.py [--turns N] [--rounds R]

(a) A run of N turns (default 200), one trivial tool call per turn, through
    `Agent.run` (the whole loop: events, budgets, guards, tracing off, the
    Dispatcher, the lifecycle) against a bare loop over the same scripted model
    and tool (stream the response, call the tool function, append messages).
    Overhead per turn = (agent - bare) / N, in CPU time of this process
    (`time.process_time`: the run is CPU-bound, and other processes on a busy
    machine then disturb it less). Rounds alternate the two; the median round
    counts. Growth = mean turn time of the last 20 turns / the first 20,
    from the agent's own IterationStarted timestamps.
    Targets (issue 5): <= 150 us per turn; growth <= 1.2. The peers we measured
    spend 2.7-26 ms per turn, most growing with history.
(b) One streaming turn whose tool calls are emitted first and whose text keeps
    streaming afterwards: the turn (model call start -> results harvested)
    against max(stream end, last tool end), the best any scheduler can do.
    Target: <= 1.05.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from typing import Any

import anyio

from toolweave.events import (
    Event,
    IterationStarted,
    LoopTransition,
    ModelCallFinished,
    ModelCallStarted,
    ToolResultReady,
)
from toolweave.loop import Agent, AgentConfig, TracePolicy
from toolweave.messages import (
    Message,
    ModelResponse,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from toolweave.models import ModelRequest, ScriptedModel, ScriptStep
from toolweave.tools import Access, Concurrency, tool

TARGET_OVERHEAD_US = 150.0
TARGET_GROWTH = 1.2
TARGET_STREAM = 1.05
PEERS = "peers measured: 2.7-26 ms per turn, most growing with history"


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def script(turns: int) -> list[Any]:
    steps: list[Any] = [
        ModelResponse(
            [Text(f"turn {i}"), ToolCall(f"c{i}", "add", {"a": i, "b": 1})],
            StopReason.TOOL_USE,
            Usage(100, 10),
        )
        for i in range(turns)
    ]
    steps.append(ModelResponse([Text("done")], StopReason.END_TURN, Usage(100, 5)))
    return steps


async def bare(turns: int) -> float:
    """The floor: the same model and tool with no framework around them."""
    model = ScriptedModel(script(turns))
    messages: list[Message] = [Message("user", "go")]
    start = time.process_time()
    while True:
        response = await model.complete(ModelRequest(tuple(messages)))
        messages.append(response.to_message())
        if not response.tool_calls:
            break
        results = [
            ToolResult(c.id, str(await add.fn(**c.input))) for c in response.tool_calls
        ]
        messages.append(Message("user", tuple(results)))
    return time.process_time() - start


async def agent_run(turns: int) -> tuple[float, list[float]]:
    """The whole loop; returns the wall time and each turn's duration."""
    model = ScriptedModel(script(turns), name="claude-sonnet-4-5")
    config = AgentConfig(max_iterations=turns + 1, tracing=TracePolicy(enabled=False))
    agent = Agent(model, [add], config=config)
    start = time.process_time()
    async with agent.open_run("go") as run:  # what Agent.run does, keeping the events
        result = await run.wait()
        events = [event async for event in run.events()]
    elapsed = time.process_time() - start
    assert result.ok, result
    starts = [e.at for e in events if isinstance(e, IterationStarted)]
    return elapsed, [b - a for a, b in itertools.pairwise(starts)]


def section_a(turns: int, rounds: int) -> bool:
    bare_times: list[float] = []
    agent_times: list[float] = []
    growth: list[float] = []
    for _ in range(rounds):
        bare_times.append(anyio.run(bare, turns))
        elapsed, durations = anyio.run(agent_run, turns)
        agent_times.append(elapsed)
        first, last = durations[:20], durations[-20:]
        growth.append(statistics.mean(last) / statistics.mean(first))
    bare_s, agent_s = statistics.median(bare_times), statistics.median(agent_times)
    overhead_us = (agent_s - bare_s) / turns * 1e6
    ratio = statistics.median(growth)
    print(
        f"(a) {turns}-turn run, one trivial tool call per turn ({rounds} rounds, median)"
    )
    print(f"    bare loop      {bare_s / turns * 1e6:8.1f} us/turn")
    print(f"    toolweave      {agent_s / turns * 1e6:8.1f} us/turn")
    print(
        f"    overhead       {overhead_us:8.1f} us/turn   target <= {TARGET_OVERHEAD_US:.0f}"
        f"   ({PEERS})"
    )
    print(f"    last 20 / first 20 turns  {ratio:5.2f}x   target <= {TARGET_GROWTH}")
    return overhead_us <= TARGET_OVERHEAD_US and ratio <= TARGET_GROWTH


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def fetch(seconds: float) -> str:
    """Wait, like a network read."""
    await anyio.sleep(seconds)
    return "fetched"


async def streaming_turn(tool_seconds: float, chunks: int, chunk_delay: float) -> float:
    calls = [ToolCall(f"f{i}", "fetch", {"seconds": tool_seconds}) for i in range(3)]
    first = ModelResponse(
        [*calls, Text("x" * chunks)], StopReason.TOOL_USE, Usage(1, 1)
    )
    model = ScriptedModel(
        [
            ScriptStep(first, chunk_delay=chunk_delay, text_chunk_chars=1),
            ModelResponse([Text("ok")], StopReason.END_TURN, Usage(1, 1)),
        ]
    )
    events: list[Event] = []
    async with Agent(model, [fetch]).open_run("go") as run:
        async for event in run.events():
            events.append(event)
    start = next(e.at for e in events if isinstance(e, ModelCallStarted))
    stream_end = next(e.at for e in events if isinstance(e, ModelCallFinished))
    tool_end = max(e.at for e in events if isinstance(e, ToolResultReady))
    turn_end = next(e.at for e in events if isinstance(e, LoopTransition))
    return (turn_end - start) / (max(stream_end, tool_end) - start)


def section_b(rounds: int) -> bool:
    ok = True
    print("(b) streaming turn, 3 SAFE calls emitted first, text streams on")
    for label, tool_s in (
        ("tools end before the stream", 0.08),
        ("tools outlast it", 0.15),
    ):
        ratios = [anyio.run(streaming_turn, tool_s, 50, 0.002) for _ in range(rounds)]
        ratio = statistics.median(ratios)
        print(
            f"    {label:28s} turn / max(stream end, last tool end) = {ratio:5.3f}"
            f"   target <= {TARGET_STREAM}"
        )
        ok = ok and ratio <= TARGET_STREAM
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    a = section_a(args.turns, args.rounds)
    b = section_b(args.rounds)
    print("PASS" if a and b else "FAIL")
    return 0 if a and b else 1


if __name__ == "__main__":
    raise SystemExit(main())
