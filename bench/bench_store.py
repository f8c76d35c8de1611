"""What recording a run costs, before and after the attached recorder, in one run.

Run: python bench/bench_store.py [--calls N] [--rounds R]

The same scripted coding-agent shapes (N calls: one per turn, and N/10 turns of
10 SAFE calls), driven the way `toolweave run --json` drives them, each event
printed as a JSON line to /dev/null:

- unrecorded      no session store (the floor);
- fed by hand     the driver before: the consumer writes each event to the store
                  on the event loop (one transaction per write), then prints it;
- attached        the driver now: the recorder is attached to the run, writes go
                  to a worker thread in batches, every call waits at its start
                  barrier until its RUNNING row is durable, and every event is
                  printed once it is durable.

Each store is a fresh SQLite file on the temporary directory's disk. Rounds
alternate the variants (each runs first in turn); the median round counts.
Figures: wall time per call, and the attached recorder's against the hand-fed
one (target: no slower than 1.10x); the unrecorded floor shows what recording
costs at all. Unrecorded runs go through no recorder code at all (the runner's
start barrier is None).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio

from toolweave.cli._drive import drive_run
from toolweave.cli._output import JsonOutput
from toolweave.loop import Agent, AgentConfig, TracePolicy
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.sessions import SessionRecorder, SQLiteSessionStore
from toolweave.tools import Access, Concurrency, tool

TARGET_RATIO = 1.10


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def look(key: str) -> str:
    """A trivial read."""
    return f"value of {key}"


def _script(calls: int, per_turn: int) -> list[Any]:
    steps: list[Any] = []
    for turn in range(calls // per_turn):
        batch = [
            ToolCall(f"c{turn}_{i}", "look", {"key": f"k{i}"}) for i in range(per_turn)
        ]
        steps.append(ModelResponse(batch, StopReason.TOOL_USE, Usage(100, 10)))
    steps.append(ModelResponse([Text("done")], StopReason.END_TURN, Usage(100, 5)))
    return steps


def _agent(calls: int, per_turn: int) -> Agent:
    config = AgentConfig(max_iterations=calls + 2, tracing=TracePolicy(enabled=False))
    return Agent(ScriptedModel(_script(calls, per_turn)), [look], config=config)


async def unrecorded(agent: Agent, store: SQLiteSessionStore, sink: Any) -> None:
    await drive_run(agent, "go", recorder=None, output=JsonOutput(sink))


async def fed_by_hand(agent: Agent, store: SQLiteSessionStore, sink: Any) -> None:
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    output = JsonOutput(sink)
    async with agent.open_run("go") as run:
        async for event in run.events():
            recorder.record(event)  # on the loop, before it is shown
            output.handle(event)


async def attached(agent: Agent, store: SQLiteSessionStore, sink: Any) -> None:
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    result = await drive_run(agent, "go", recorder=recorder, output=JsonOutput(sink))
    assert result.finished is not None
    assert result.store_failure is None


Variant = Callable[[Agent, SQLiteSessionStore, Any], Coroutine[Any, Any, None]]
VARIANTS: dict[str, Variant] = {
    "unrecorded": unrecorded,
    "fed by hand": fed_by_hand,
    "attached": attached,
}


def _once(variant: Variant, calls: int, per_turn: int) -> float:
    with tempfile.TemporaryDirectory() as tmp, Path("/dev/null").open("w") as sink:
        store = SQLiteSessionStore(Path(tmp) / "s.db")
        agent = _agent(calls, per_turn)
        start = time.perf_counter()
        anyio.run(variant, agent, store, sink)
        elapsed = time.perf_counter() - start
        store.close()
    return elapsed


def measure(calls: int, per_turn: int, rounds: int) -> dict[str, float]:
    names = list(VARIANTS)
    for name in names:  # warm-up
        _once(VARIANTS[name], calls, per_turn)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            times[name].append(_once(VARIANTS[name], calls, per_turn))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    ok = True
    for per_turn in (1, 10):
        turns = args.calls // per_turn
        medians = measure(args.calls, per_turn, args.rounds)
        print(
            f"{args.calls} calls, {turns} turns of {per_turn} ({args.rounds} rounds,"
            " median wall time)"
        )
        for name, seconds in medians.items():
            per_call = seconds / args.calls * 1e6
            print(f"    {name:12s} {seconds * 1e3:8.1f} ms   {per_call:7.1f} us/call")
        ratio = medians["attached"] / medians["fed by hand"]
        cost = (medians["attached"] - medians["unrecorded"]) / args.calls * 1e6
        print(
            f"    attached / fed by hand  {ratio:5.2f}x   target <= {TARGET_RATIO}"
            f"   (recording costs {cost:.0f} us/call over unrecorded)"
        )
        ok = ok and ratio <= TARGET_RATIO
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
