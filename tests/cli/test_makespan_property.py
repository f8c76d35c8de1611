"""For any batch recorded from the library, the wall time is never below its lower bound.

issue 27, item 8. The cause of "a wall time below its own lower bound" was a
recorder made the library's way (`SessionRecorder(store, id, model=...)`, no
`describe`): no call had a recorded access, and an unrecorded access counted as a
barrier, so the bound became the serial time. Now each admitted call carries the
access the scheduler's gate scheduled it by (`ToolUseStarted.reads`/`writes`), and
an access still unknown counts as independent (a bound must not assume a conflict
nobody recorded).

Random batches (reads, writes, undeclared SAFE and SEQUENTIAL calls, calls that
ask the user and wait for the answer, random durations, every policy, caps) run
through `tw.Agent` with `ScriptedModel` on trio's virtual clock, recorded to SQLite
on disk with no describer, loaded as the timeline loads them: wall >= bound, always;
under the `conflict` policy with no cap the two are equal (the policy reaches the
bound), which fails if any access were lost; time waiting for the user is never in
the wall time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import toolweave as tw
from toolweave.cli._timeline_data import load_groups
from toolweave.execution import PermissionRules
from toolweave.models import ScriptedModel
from toolweave.sessions import SessionRecorder, SQLiteSessionStore

KEYS = ("a", "b", "c")
KINDS = ("read", "write", "safe_undeclared", "sequential_undeclared", "asks")


def _registry() -> list[tw.tools.Tool]:
    @tw.tool(
        concurrency=tw.Concurrency.SAFE,
        access=lambda a: tw.Access(reads=[f"k:{a['key']}"]),
    )
    async def read(key: str, tenths: int) -> str:
        """Read a key."""
        await anyio.sleep(tenths / 10)
        return "r"

    @tw.tool(access=lambda a: tw.Access(writes=[f"k:{a['key']}"]))
    async def write(key: str, tenths: int) -> str:
        """Write a key."""
        await anyio.sleep(tenths / 10)
        return "w"

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def safe_undeclared(key: str, tenths: int) -> str:
        """A SAFE call that declares nothing: it reads everything."""
        await anyio.sleep(tenths / 10)
        return "s"

    @tw.tool
    async def sequential_undeclared(key: str, tenths: int) -> str:
        """A SEQUENTIAL call that declares nothing: a barrier."""
        await anyio.sleep(tenths / 10)
        return "q"

    @tw.tool(access=lambda a: tw.Access(writes=[f"k:{a['key']}"]))
    async def asks(key: str, tenths: int, think: int) -> str:
        """A write the user must approve; the user thinks `think` tenths."""
        await anyio.sleep(tenths / 10)
        return "a"

    return [read, write, safe_undeclared, sequential_undeclared, asks]


call_specs = st.tuples(
    st.sampled_from(KINDS), st.sampled_from(KEYS), st.integers(0, 5), st.integers(0, 9)
)
scenarios = st.fixed_dictionaries(
    {
        "batches": st.lists(
            st.lists(call_specs, min_size=1, max_size=6), min_size=1, max_size=3
        ),
        "policy": st.sampled_from(
            ["conflict", "partition", "rwlock", "all_or_nothing"]
        ),
        "cap": st.sampled_from([None, 1, 2, 3]),
        "streaming": st.booleans(),
    }
)


def _call(index: int, spec: tuple[str, str, int, int]) -> tw.ToolCall:
    kind, key, tenths, think = spec
    args: dict[str, Any] = {"key": key, "tenths": tenths}
    if kind == "asks":
        args["think"] = think
    return tw.ToolCall(f"c{index}", kind, args)


async def _run(scenario: dict[str, Any], store: SQLiteSessionStore) -> str:
    batches = scenario["batches"]
    script = [
        tw.ModelResponse(
            [_call(i, spec) for i, spec in enumerate(batch)],
            stop_reason=tw.StopReason.TOOL_USE,
        )
        for batch in batches
    ]
    script.append(tw.ModelResponse([tw.Text("done")]))

    async def answer(call: tw.ToolCall, reason: str) -> Literal["allow"]:
        await anyio.sleep(call.input["think"] / 10)  # the user thinking
        return "allow"

    config = tw.AgentConfig(
        concurrency=tw.ConcurrencyConfig(
            policy=scenario["policy"],
            max_concurrency=scenario["cap"] or 10,
            streaming_overlap=scenario["streaming"],
        ),
        permissions=PermissionRules(ask=["asks"]),
        ask=answer,
    )
    agent = tw.Agent(ScriptedModel(script), _registry(), config=config)
    session = store.create_session(workspace="", model="scripted", title="p")
    recorder = SessionRecorder(store, session.id, model="scripted")  # the library's way
    async for event in agent.run_stream("go"):
        recorder.record(event)
    return session.id


@pytest.mark.timeout(600)
@settings(max_examples=60)
@given(scenario=scenarios)
def test_a_recorded_batch_never_beats_its_lower_bound(scenario: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteSessionStore(Path(tmp) / "s.db")
        try:
            sid = anyio.run(
                _run,
                scenario,
                store,
                backend="trio",
                backend_options={"clock": trio.testing.MockClock(autojump_threshold=0)},
            )
            groups = [g for g in load_groups(store, sid) if g.bars]
        finally:
            store.close()
    assert len(groups) == len(scenario["batches"])
    for group, batch in zip(groups, scenario["batches"], strict=True):
        stats = group.stats
        assert stats.makespan >= stats.ideal - 1e-9, (stats, batch)
        assert stats.serial >= stats.ideal - 1e-9
        if len(batch) > 1:  # classified by the gate: every access recorded
            assert stats.unknown_access == 0, (stats, batch)
        thinking = [spec[3] / 10 for spec in batch if spec[0] == "asks"]
        if thinking:  # asks are put one at a time: each call waits its turn too
            assert stats.permission_wait >= sum(thinking) - 1e-9
        else:
            assert stats.permission_wait == 0
        free = scenario["policy"] == "conflict" and scenario["cap"] is None
        if free and len(batch) > 1 and not thinking:
            assert stats.makespan == pytest.approx(stats.ideal, abs=1e-9), (
                stats,
                batch,
            )
