"""The store and resume with repeated call ids: records keyed by position, not by id.

Before, a second call with the id of the first (in one response, or ``call_0`` in
every turn) overwrote the first's record, so a crash mid-batch answered the
wrong call on resume. Each call now has its own record (keyed by
`ToolCall.ref`), the stored transcript keeps the model's ids, and a resumed
session continues from it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from sessions_support import DEAD_OWNER, Bench, call, say, use

from toolweave.events import RunFinished
from toolweave.loop import Agent, transcript_problems
from toolweave.messages import ToolCall
from toolweave.models import ScriptedModel
from toolweave.sessions import (
    CallState,
    SessionRecorder,
    SQLiteSessionStore,
    lost_result,
    prepare_resume,
    skipped_result,
)
from toolweave.sessions._sqlite_rows import SCHEMA_VERSION
from toolweave.tools import ToolRegistry

pytestmark = pytest.mark.anyio

TURNS = [
    use(call("call_0", "look", key="a"), call("call_0", "touch", key="b")),
    use(call("call_0", "look", key="c")),
    say("done"),
]


async def _record(
    store: SQLiteSessionStore, sid: str, model: ScriptedModel
) -> RunFinished:
    recorder = SessionRecorder(store, sid, model="scripted")
    finished = None
    async for event in Agent(model, ToolRegistry(Bench().tools())).run_stream("go"):
        recorder.record(event)
        if isinstance(event, RunFinished):
            finished = event
    assert finished is not None
    return finished


async def test_every_call_has_its_own_record_and_the_transcript_round_trips(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    finished = await _record(store, sid, ScriptedModel(TURNS))
    records = store.calls(sid)
    assert [(r.iteration, r.index, r.call.id, r.call.key) for r in records] == [
        (1, 0, "call_0", "1.0"),
        (1, 1, "call_0", "1.1"),
        (2, 0, "call_0", "2.0"),
    ]
    assert [r.state for r in records] == [CallState.FINISHED] * 3
    assert [r.result.text for r in records if r.result] == [
        "value of a",
        "touched b",
        "value of c",
    ]
    stored = store.messages(sid)
    assert stored == list(finished.messages)
    assert [c.id for m in stored for c in m.tool_calls] == ["call_0"] * 3  # originals
    assert [c.key for m in stored for c in m.tool_calls] == ["1.0", "1.1", "2.0"]
    assert transcript_problems(stored) == []

    # A reopened store, a new run continuing the session from the stored transcript.
    store.close()
    store = SQLiteSessionStore(tmp_path / "s.db")
    plan = prepare_resume(store, sid, prompt="more")
    model = ScriptedModel([use(call("call_0", "look", key="d")), say("ok")])
    recorder = SessionRecorder(store, sid, model="scripted")
    async for event in Agent(model, ToolRegistry(Bench().tools())).run_stream(
        plan.prompt, history=plan.history
    ):
        recorder.record(event)
    assert store.find_session(sid).status == "completed"
    assert [r.call.key for r in store.calls(sid) if r.run == 2] == ["1.0"]
    assert [r.text for r in store.messages(sid)[-2].tool_results] == ["value of d"]
    store.close()


async def test_a_crash_with_repeated_ids_answers_each_call_for_itself(
    tmp_path: Path, crash_copy: Any
) -> None:
    """One finished, one running, one not started — all named ``call_0``."""
    store = SQLiteSessionStore(tmp_path / "s.db")
    bench = Bench()
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    batch = use(
        call("call_0", "look", key="x"),
        call("call_0", "slow", key="y"),
        call("call_0", "look", key="y"),  # waits for `slow`: never starts
    )

    agent = Agent(ScriptedModel([batch]), ToolRegistry(bench.tools()))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: agent.run("go", recorder=recorder))
        await bench.slow_started.wait()
        await anyio.wait_all_tasks_blocked()
        await recorder.flush()
        crashed = crash_copy(store, tmp_path / "crashed.db")  # the process dies
        tg.cancel_scope.cancel()

    plan = prepare_resume(crashed, sid)
    fast, hold, after = plan.history[-1].tool_results
    assert fast.text == "value of x" and not fast.is_error
    assert hold == lost_result(batch.tool_calls[1])
    assert after == skipped_result(batch.tool_calls[2])
    assert [r.call.key for r in plan.lost] == ["1.1"]
    assert [r.call.key for r in plan.skipped] == ["1.2"]
    assert transcript_problems(plan.history) == []
    assert bench.calls == {"look x": 1, "slow y": 1}


def test_a_schema_1_store_is_migrated_with_its_calls(tmp_path: Path) -> None:
    """Stores written before calls were keyed by position keep every call row."""
    path = tmp_path / "old.db"
    store = SQLiteSessionStore(path)
    sid = store.create_session(workspace="/w", model="m", title="t").id
    store.close()
    with sqlite3.connect(path) as conn:  # rebuild `calls` as schema 1 had it
        conn.executescript(
            """
            DROP TABLE calls;
            CREATE TABLE calls (
                session_id TEXT NOT NULL, run INTEGER NOT NULL,
                iteration INTEGER NOT NULL, call_id TEXT NOT NULL,
                attempt INTEGER NOT NULL, idx INTEGER NOT NULL, call TEXT NOT NULL,
                state TEXT NOT NULL, access TEXT, admitted_at REAL, running_at REAL,
                finished_at REAL, result TEXT,
                PRIMARY KEY (session_id, run, iteration, call_id, attempt));
            PRAGMA user_version=1;
            """
        )
        conn.execute(
            "INSERT INTO calls VALUES (?, 1, 1, 'toolu_1', 1, 0, ?, 'finished',"
            " NULL, 0.1, 0.2, 0.3, NULL)",
            (
                sid,
                '{"type": "tool_call", "id": "toolu_1", "name": "read", "input": {}}',
            ),
        )
    store = SQLiteSessionStore(path)
    (record,) = store.calls(sid)
    assert record.call == ToolCall("toolu_1", "read", {})
    assert record.state is CallState.FINISHED
    assert record.key == (sid, 1, 1, "toolu_1", 1)
    store.put_call(record)  # the same row, not a second one
    assert len(store.calls(sid)) == 1
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
