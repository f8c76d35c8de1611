"""SQLiteSessionStore on a real database file: sessions, runs, transcripts, calls, durability."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from toolweave._exceptions import StoreError
from toolweave.events import CompletionReason
from toolweave.messages import Message, Text, ToolCall, ToolResult, Usage
from toolweave.sessions import (
    AccessRecord,
    CallRecord,
    CallState,
    ModelCallRecord,
    RunOutcome,
    RunState,
    SessionStore,
    SQLiteSessionStore,
    current_owner,
)

DEAD_OWNER = (
    f"{socket.gethostname()}:{2**22 + 4321}"  # above Linux's pid_max: never alive
)


@pytest.fixture
def store(tmp_path: Path) -> SQLiteSessionStore:
    return SQLiteSessionStore(tmp_path / "db" / "sessions.db", blob_threshold=200)


def test_it_implements_the_store_interface_in_wal_mode(
    store: SQLiteSessionStore,
) -> None:
    assert isinstance(store, SessionStore)
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_sessions_are_found_by_prefix_and_listed_newest_first(
    store: SQLiteSessionStore,
) -> None:
    first = store.create_session(workspace="/w", model="m", title="  fix   the\nbug  ")
    second = store.create_session(workspace="/w", model="m", title="second")
    assert first.title == "fix the bug" and first.status == "new"
    long = store.create_session(workspace="/w", model="m", title="word " * 40)
    assert len(long.title) == 100 and long.title.endswith("…")
    assert store.find_session(first.id[:10]).id == first.id
    assert store.find_session(first.id.upper()).id == first.id
    store.append_message(first.id, Message("user", "touch"), run=1)
    assert [s.id for s in store.list_sessions()][:1] == [first.id]
    assert second.id in [s.id for s in store.list_sessions()]
    assert [s.id for s in store.list_sessions(limit=1)] == [first.id]
    with pytest.raises(StoreError, match="no session"):
        store.find_session("0" * 32)
    with pytest.raises(StoreError, match="empty"):
        store.find_session(" ")


def test_an_ambiguous_prefix_is_refused(store: SQLiteSessionStore) -> None:
    ids = {
        store.create_session(workspace="/w", model="m", title=str(i)).id
        for i in range(40)
    }
    shared = next(a[:1] for a in ids for b in ids if a != b and a[0] == b[0])
    with pytest.raises(StoreError, match="ambiguous"):
        store.find_session(shared)


def test_runs_record_owner_usage_and_outcome(store: SQLiteSessionStore) -> None:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    assert (
        store.begin_run(sid, prompt="go", model="anthropic:x", owner=current_owner())
        == 1
    )
    assert store.find_session(sid).status == "running"  # this process is alive
    store.update_run_usage(sid, 1, Usage(10, 5), 0.25)
    assert store.find_session(sid).usage == Usage(10, 5)
    store.finish_run(
        sid,
        1,
        RunOutcome(
            RunState.FINISHED,
            reason=CompletionReason.COMPLETED,
            usage=Usage(11, 6),
            cost=0.5,
        ),
    )
    assert (
        store.begin_run(sid, prompt="more", model="anthropic:y", owner=DEAD_OWNER) == 2
    )
    info = store.find_session(sid)
    assert info.status == "crashed" and info.model == "anthropic:y" and info.runs == 2
    assert info.usage == Usage(11, 6) and info.cost == 0.5
    runs = store.runs(sid)
    assert [r.state for r in runs] == [RunState.FINISHED, RunState.RUNNING]
    assert (
        runs[0].reason is CompletionReason.COMPLETED
        and runs[0].finished_wall is not None
    )
    store.finish_run(sid, 2, RunOutcome(RunState.ABANDONED, detail="quit"))
    assert store.find_session(sid).status == "abandoned"


def test_set_transcript_archives_what_it_replaces_and_keeps_the_rest(
    store: SQLiteSessionStore,
) -> None:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    old = [Message("user", "a"), Message("assistant", "b"), Message("user", "c")]
    for message in old:
        store.append_message(sid, message, run=1)
    compacted = [Message("user", "a"), Message("assistant", "summary of b and c")]
    store.set_transcript(sid, compacted, run=1)
    assert store.messages(sid) == compacted
    assert store.messages(sid, archived=True) == old[1:]
    assert store.find_session(sid).messages == 2
    store.append_message(sid, Message("user", "d"), run=2)
    assert store.messages(sid)[-1] == Message("user", "d")


def test_calls_upsert_by_key_and_large_results_live_in_files(
    store: SQLiteSessionStore, tmp_path: Path
) -> None:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    call = ToolCall("c1", "read", {"path": "big.txt"})
    record = CallRecord(
        sid, 1, 1, call, index=0, access=AccessRecord(("fs:/w/big.txt",), ())
    )
    store.put_call(record)
    big = ToolResult("c1", (Text("z" * 10_000),))
    done = CallRecord(
        sid,
        1,
        1,
        call,
        index=0,
        state=CallState.FINISHED,
        access=record.access,
        admitted_at=0.5,
        running_at=0.75,
        finished_at=2.0,
        result=big,
    )
    store.put_call(done)
    store.put_call(CallRecord(sid, 1, 1, call, attempt=2, state=CallState.WAITING))
    calls = store.calls(sid)
    assert [(c.attempt, c.state) for c in calls] == [
        (1, CallState.FINISHED),
        (2, CallState.WAITING),
    ]
    assert calls[0] == done
    blobs = list((tmp_path / "db" / "sessions.db.blobs").rglob("*.json"))
    assert len(blobs) == 1 and "z" * 100 in blobs[0].read_text()
    row = (
        sqlite3.connect(store.path)
        .execute("SELECT result FROM calls WHERE attempt = 1")
        .fetchone()
    )
    assert len(row[0]) < 300


def test_model_calls_and_events(store: SQLiteSessionStore) -> None:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    record = ModelCallRecord(
        session_id=sid, run=1, iteration=1, model="m", started_at=0.1
    )
    store.put_model_call(record)
    finished = ModelCallRecord(
        session_id=sid,
        run=1,
        iteration=1,
        model="m",
        started_at=0.1,
        first_chunk_at=0.2,
        finished_at=0.9,
        stop_reason="end_turn",
        usage=Usage(4, 2),
    )
    store.put_model_call(finished)
    assert store.model_calls(sid) == [finished]
    store.append_event(sid, 1, kind="ToolRunning", at=0.3, data={"call_id": "c1"})
    store.append_event(sid, 1, kind="Warning", at=0.4, data={"message": "m"})
    events = store.events(sid)
    assert [(e.kind, e.at, dict(e.data)) for e in events] == [
        ("ToolRunning", 0.3, {"call_id": "c1"}),
        ("Warning", 0.4, {"message": "m"}),
    ]
    assert events[0].seq < events[1].seq


def test_writes_are_visible_to_another_connection_at_once(
    store: SQLiteSessionStore,
) -> None:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    store.append_message(sid, Message("user", "durable"), run=1)
    reader = SQLiteSessionStore(store.path)
    assert reader.messages(sid) == [Message("user", "durable")]
    reader.close()


def test_writing_to_an_unknown_session_or_a_closed_store_fails(
    store: SQLiteSessionStore,
) -> None:
    with pytest.raises(StoreError, match="no session"):
        store.append_message("f" * 32, Message("user", "x"), run=1)
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        store.list_sessions()


def test_a_database_from_a_newer_schema_or_not_a_database_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "new.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SQLiteSessionStore(path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        SQLiteSessionStore(junk)


def test_a_batch_is_written_all_or_none(store: SQLiteSessionStore) -> None:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    with pytest.raises(StoreError, match="no session"):
        store.batch(
            [
                lambda: store.append_message(sid, Message("user", "kept?"), run=1),
                lambda: store.append_message("0" * 32, Message("user", "x"), run=1),
            ]
        )
    assert store.messages(sid) == []  # the first was rolled back with the second
    store.batch([lambda: store.append_message(sid, Message("user", "a"), run=1)] * 2)
    assert [m.text for m in store.messages(sid)] == ["a", "a"]


def test_closing_leaves_the_file_readable_from_read_only_places(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    first, second = SQLiteSessionStore(path), SQLiteSessionStore(path)
    sid = first.create_session(workspace="/w", model="m", title="t").id
    first.close()  # another connection is open: it stays in WAL mode, at once
    assert path.with_name("s.db-wal").exists()
    assert second.find_session(sid).title == "t"
    second.close()  # the last one: back to rollback mode, no -wal, no -shm
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    again = SQLiteSessionStore(path)  # and WAL again for the next writer
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert again.find_session(sid).title == "t"
    again.close()


def test_a_read_only_store_writes_nothing_and_needs_the_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no session database"):
        SQLiteSessionStore(tmp_path / "missing.db", read_only=True)
    assert not (tmp_path / "missing.db").exists()
    writer = SQLiteSessionStore(tmp_path / "s.db")
    sid = writer.create_session(workspace="/w", model="m", title="t").id
    reader = SQLiteSessionStore(tmp_path / "s.db", read_only=True)
    for write in (
        lambda: reader.create_session(workspace="/w", model="m", title="x"),
        lambda: reader.append_message(sid, Message("user", "x"), run=1),
        lambda: reader.acquire_lease(sid, owner="h:1", token="t", term=1.0),
    ):
        with pytest.raises(StoreError, match="read-only"):
            write()
    assert reader.find_session(sid).messages == 0
    reader.close()
    writer.close()
