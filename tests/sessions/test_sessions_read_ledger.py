"""Resume keeps what the session knew: the read ledger is recorded and restored.

The loop reports the ledger (`ReadStateChanged`) after each tool batch that
changed it; the recorder stores it with the session's events; `prepare_resume`
gives it back (`ResumePlan.read_files`) and `ReadLedger.restore` makes the new
run's read-before-edit guard know it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from sessions_support import say, use

from toolweave._exceptions import StoreError
from toolweave.events import FileRead, ReadStateChanged, RunFinished
from toolweave.execution import PermissionMode
from toolweave.loop import Agent, AgentConfig
from toolweave.messages import Message, ToolCall
from toolweave.models import ScriptedModel
from toolweave.sessions import (
    SessionRecorder,
    SQLiteSessionStore,
    event_to_json,
    prepare_resume,
    read_state,
)
from toolweave.sessions._codec import file_read_from_json
from toolweave.tools import ReadLedger, coding_tools

pytestmark = pytest.mark.anyio


def read(call_id: str, path: str) -> ToolCall:
    return ToolCall(call_id, "read", {"path": path})


def edit(call_id: str, path: str) -> ToolCall:
    return ToolCall(
        call_id, "edit", {"path": path, "old_string": "b", "new_string": "B"}
    )


async def _run(
    store: SQLiteSessionStore,
    sid: str,
    root: Path,
    model: ScriptedModel,
    *,
    prompt: str = "go",
    resume: bool = False,
) -> list[object]:
    # the edits under test run unasked; permissions are not what is tested here
    agent = Agent(
        model,
        coding_tools(root),
        config=AgentConfig(permission_mode=PermissionMode.ACCEPT_EDITS, workspace=root),
    )
    history: Sequence[Message] = ()
    if resume:
        plan = prepare_resume(store, sid, prompt=prompt)
        agent.state.read_files.restore(plan.read_files)
        history, prompt = plan.history, plan.prompt
    recorder = SessionRecorder(store, sid, model="scripted")
    events: list[object] = []
    try:
        async for event in agent.run_stream(prompt, history=history):
            recorder.record(event)
            events.append(event)
    finally:
        await agent.aclose()
    return events


async def _session(tmp_path: Path) -> tuple[SQLiteSessionStore, str, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\nb\n")
    (root / "other.txt").write_text("x\n")
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace=str(root), model="scripted", title="t").id
    events = await _run(
        store, sid, root, ScriptedModel([use(read("r1", "a.txt")), say("read")])
    )
    (changed,) = [e for e in events if isinstance(e, ReadStateChanged)]
    assert [f.path for f in changed.files] == [str((root / "a.txt").resolve())]
    return store, sid, root


async def test_an_edit_after_resume_works_and_is_recorded(tmp_path: Path) -> None:
    store, sid, root = await _session(tmp_path)
    events = await _run(
        store,
        sid,
        root,
        ScriptedModel([use(edit("e1", "a.txt")), say("edited")]),
        prompt="edit it",
        resume=True,
    )
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    (result,) = finished.messages[-2].tool_results
    assert not result.is_error, result.text
    assert (root / "a.txt").read_text() == "a\nB\n"
    (after,) = read_state(store, sid)  # the edit changed the ledger: recorded again
    assert after.size == len("a\nB\n")
    store.close()


async def test_a_stale_read_is_refused_after_resume(tmp_path: Path) -> None:
    store, sid, root = await _session(tmp_path)
    (root / "a.txt").write_text("a\nb\nchanged meanwhile\n")
    events = await _run(
        store,
        sid,
        root,
        ScriptedModel([use(edit("e1", "a.txt")), say("ok")]),
        prompt="edit it",
        resume=True,
    )
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    (result,) = finished.messages[-2].tool_results
    assert result.is_error and "changed on disk since you last read it" in result.text
    assert (root / "a.txt").read_text() == "a\nb\nchanged meanwhile\n"
    store.close()


async def test_a_file_never_read_is_still_refused_after_resume(tmp_path: Path) -> None:
    store, sid, root = await _session(tmp_path)
    events = await _run(
        store,
        sid,
        root,
        ScriptedModel([use(edit("e1", "other.txt")), say("ok")]),
        prompt="edit the other",
        resume=True,
    )
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    (result,) = finished.messages[-2].tool_results
    assert result.is_error and "has not been read in this session" in result.text
    store.close()


async def test_a_batch_that_reads_nothing_new_reports_nothing(tmp_path: Path) -> None:
    store, sid, root = await _session(tmp_path)
    events = await _run(
        store,
        sid,
        root,
        ScriptedModel([use(ToolCall("g1", "glob", {"pattern": "*.txt"})), say("ok")]),
        prompt="list",
        resume=True,
    )
    assert not [e for e in events if isinstance(e, ReadStateChanged)]
    assert len(read_state(store, sid)) == 1  # the first run's record still stands
    store.close()


def test_snapshot_restore_and_json_round_trip(tmp_path: Path) -> None:
    ledger = ReadLedger()
    ledger.record(tmp_path / "b", mtime_ns=2, size=20, span=(1, None))
    ledger.record(tmp_path / "a", mtime_ns=1, size=10, span=(5, 10))
    ledger.record(tmp_path / "a", mtime_ns=1, size=10, span=(1, 4))
    files = ledger.snapshot()
    assert files == (
        FileRead(str(tmp_path / "a"), 1, 10, ((1, 4), (5, 10))),
        FileRead(str(tmp_path / "b"), 2, 20, ((1, None),)),
    )
    data = event_to_json(ReadStateChanged(files, at=0.0))
    assert tuple(file_read_from_json(f) for f in data["files"]) == files
    again = ReadLedger()
    again.restore(files)
    assert again.snapshot() == files
    assert again.get(tmp_path / "a") == ledger.get(tmp_path / "a")


@pytest.mark.parametrize(
    "bad",
    [{}, {"path": "p", "mtime_ns": "x", "size": 1}, {"path": "p", "mtime_ns": 1}],
)
def test_a_malformed_stored_entry_is_a_store_error(bad: dict[str, object]) -> None:
    with pytest.raises(StoreError, match="malformed"):
        file_read_from_json(bad)
