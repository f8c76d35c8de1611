"""One live owner per session: the lease, taken atomically, renewed, released, taken over."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import anyio
import pytest
from sessions_support import DEAD_OWNER, say, use

from toolweave._exceptions import SessionBusyError, UsageError
from toolweave.events import CompletionReason
from toolweave.loop import Agent
from toolweave.messages import Message, ToolCall
from toolweave.models import ScriptedModel
from toolweave.sessions import (
    CallRecord,
    CallState,
    SessionLease,
    SessionRecorder,
    SQLiteSessionStore,
    current_owner,
    lease_live,
    prepare_resume,
)
from toolweave.tools import Access, Interrupt, tool

OTHER_HOST = "another-host.example:4242"  # cannot be checked: alive until silent


def _session(store: SQLiteSessionStore) -> str:
    sid = store.create_session(workspace="/w", model="m", title="t").id
    store.append_message(sid, Message("user", "go"), run=1)
    return sid


def _age(db: Path, sid: str, seconds: float) -> None:
    """Make the lease's last heartbeat `seconds` old (a holder that fell silent)."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE leases SET heartbeat_wall = heartbeat_wall - ? WHERE session_id = ?",
            (seconds, sid),
        )


def test_a_held_lease_refuses_a_second_owner_naming_the_holder(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = _session(store)
    first = SessionLease.acquire(store, sid)
    with pytest.raises(SessionBusyError) as caught:
        SessionLease.acquire(store, sid)
    text = str(caught.value)
    assert f"is being run by {current_owner()} since" in text and sid[:12] in text
    assert "last heartbeat" in text
    first.renew()  # still the holder
    first.release()
    first.release()  # idempotent
    second = SessionLease.acquire(store, sid)  # free once released
    assert store.lease(sid) is not None and store.lease(sid).token == second.token  # type: ignore[union-attr]
    second.release()
    assert store.lease(sid) is None
    store.close()


def test_a_dead_owner_on_this_host_is_taken_over_at_once(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = _session(store)
    crashed = SessionLease.acquire(store, sid, owner=DEAD_OWNER)
    successor = SessionLease.acquire(store, sid)
    held = store.lease(sid)
    assert held is not None and held.owner == current_owner()
    with pytest.raises(SessionBusyError, match="lost its lease"):
        crashed.renew()  # the dead owner's hold is gone for good
    successor.release()
    store.close()


def test_an_owner_silent_past_its_term_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = _session(store)
    remote = SessionLease.acquire(store, sid, owner=OTHER_HOST, term=30.0)
    with pytest.raises(SessionBusyError, match=OTHER_HOST):  # alive as far as known
        SessionLease.acquire(store, sid)
    held = store.lease(sid)
    assert held is not None and lease_live(held)
    _age(db, sid, 31.0)
    held = store.lease(sid)
    assert held is not None and not lease_live(held)
    assert store.find_session(sid).status == "new"  # no run yet
    successor = SessionLease.acquire(store, sid)
    assert store.lease(sid).owner == current_owner()  # type: ignore[union-attr]
    with pytest.raises(SessionBusyError):
        remote.renew()
    successor.release()
    store.close()


def test_a_crashed_run_reads_crashed_once_its_lease_is_stale(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = _session(store)
    SessionLease.acquire(store, sid, owner=OTHER_HOST, term=30.0)
    store.begin_run(sid, prompt="go", model="m", owner=OTHER_HOST, write_ahead=True)
    assert store.find_session(sid).status == "running"  # a live lease
    _age(db, sid, 31.0)
    assert store.find_session(sid).status == "crashed"  # silent past its term
    store.close()


def test_prepare_resume_takes_the_lease_and_a_refused_one_changes_nothing(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="m", title="t").id
    call = ToolCall("c", "touch", {"key": "a"}, key="1.0")
    store.append_message(sid, Message("user", "go"), run=1)
    store.append_message(sid, Message("assistant", (call,)), run=1)
    store.begin_run(sid, prompt="go", model="m", owner=DEAD_OWNER, write_ahead=True)
    store.put_call(CallRecord(sid, 1, 1, call, state=CallState.RUNNING))
    other = SQLiteSessionStore(tmp_path / "s.db")  # another process's connection
    holder = SessionLease.acquire(other, sid)
    with pytest.raises(SessionBusyError):
        prepare_resume(store, sid)
    assert len(store.messages(sid)) == 2  # nothing was answered by the refused one
    assert [c.state for c in store.calls(sid)] == [CallState.RUNNING]
    holder.release()
    plan = prepare_resume(store, sid)
    assert plan.lease is not None and [r.call.id for r in plan.lost] == ["c"]
    with pytest.raises(SessionBusyError):
        prepare_resume(other, sid, prompt="again")
    plan.lease.release()
    other.close()
    store.close()


def test_a_lease_handed_to_prepare_resume_must_be_this_sessions(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    one, two = _session(store), _session(store)
    store.append_message(one, Message("assistant", "hi"), run=1)
    lease = SessionLease.acquire(store, two)
    with pytest.raises(UsageError, match="is for session"):
        prepare_resume(store, one, prompt="more", lease=lease)
    lease.release()
    store.close()


@pytest.mark.anyio
async def test_a_run_holds_the_lease_while_it_lives_and_releases_it(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="m", title="t").id
    entered, release = anyio.Event(), anyio.Event()

    @tool(access=lambda a: Access())
    async def hold() -> str:
        """Hold the run open, a few lease terms long."""
        entered.set()
        await release.wait()
        return "held"

    lease = SessionLease.acquire(store, sid, term=0.4)  # heartbeat every 0.1 s
    recorder = SessionRecorder(store, sid, model="m", lease=lease)
    agent = Agent(ScriptedModel([use(ToolCall("h", "hold", {})), say("ok")]), [hold])
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: agent.run("go", recorder=recorder))
        await entered.wait()
        await anyio.sleep(1.2)  # three terms: only heartbeats keep it live
        other = SQLiteSessionStore(tmp_path / "s.db")
        held = other.lease(sid)
        assert held is not None and held.token == lease.token and lease_live(held)
        with pytest.raises(SessionBusyError):
            SessionLease.acquire(other, sid)
        assert other.find_session(sid).status == "running"
        other.close()
        release.set()
    assert store.lease(sid) is None  # released with the run
    assert store.find_session(sid).status == "completed"
    store.close()


@pytest.mark.anyio
async def test_a_session_held_elsewhere_is_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="m", title="t").id
    ran: list[str] = []

    @tool(access=lambda a: Access())
    async def effect() -> str:
        """A side effect."""
        ran.append("effect")
        return "done"

    SessionLease.acquire(store, sid, owner=OTHER_HOST)
    agent = Agent(
        ScriptedModel([use(ToolCall("e", "effect", {})), say("ok")]), [effect]
    )
    with pytest.raises(SessionBusyError, match=OTHER_HOST):
        await agent.run("go", recorder=SessionRecorder(store, sid, model="m"))
    assert ran == [] and store.runs(sid) == [] and store.messages(sid) == []
    store.close()


@pytest.mark.anyio
async def test_a_run_whose_lease_is_taken_over_stops_honestly(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace="/w", model="m", title="t").id
    entered = anyio.Event()

    @tool(access=lambda a: Access(), interrupt=Interrupt.CANCEL)
    async def hold() -> str:
        """Runs until stopped."""
        entered.set()
        await anyio.sleep_forever()
        return "never"

    lease = SessionLease.acquire(store, sid, term=0.4)
    recorder = SessionRecorder(store, sid, model="m", lease=lease)
    agent = Agent(ScriptedModel([use(ToolCall("h", "hold", {})), say("ok")]), [hold])
    async with agent.open_run("go", recorder=recorder) as run:
        await entered.wait()
        await recorder.flush()
        with sqlite3.connect(db) as conn:  # a successor took it over (as if we hung)
            conn.execute(
                "UPDATE leases SET owner = ?, token = 'successor' WHERE session_id = ?",
                (OTHER_HOST, sid),
            )
        result = await run.wait()  # its next heartbeat finds the lease gone
    assert result.completion_reason is CompletionReason.ERROR
    assert "lost its lease" in result.detail and OTHER_HOST in result.detail
    assert recorder.failure is not None
    held = store.lease(sid)
    assert held is not None and held.token == "successor"  # untouched by the loser
    store.close()


def test_schema_2_stores_gain_leases_and_read_as_recorded_without_the_barrier(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace="/w", model="m", title="t").id
    call = ToolCall("c", "touch", {"key": "a"}, key="1.0")
    store.append_message(sid, Message("user", "go"), run=1)
    store.append_message(sid, Message("assistant", (call,)), run=1)
    store.begin_run(sid, prompt="go", model="m", owner=DEAD_OWNER, write_ahead=True)
    store.put_call(CallRecord(sid, 1, 1, call, state=CallState.WAITING))
    store.close()
    with sqlite3.connect(db) as conn:  # as schema 2 had it
        conn.executescript(
            "DROP TABLE leases; ALTER TABLE runs DROP COLUMN write_ahead;"
            " PRAGMA user_version=2;"
        )
        conn.execute("PRAGMA journal_mode=WAL")
    reader = SQLiteSessionStore(db, read_only=True)  # read as it is, not migrated
    assert reader.find_session(sid).status == "crashed"
    assert reader.lease(sid) is None and reader.runs(sid)[0].write_ahead is False
    reader.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    store = SQLiteSessionStore(db)  # migrated
    assert store.runs(sid)[0].write_ahead is False
    plan = prepare_resume(store, sid)  # the lease table exists now
    (answer,) = plan.history[-1].tool_results
    assert answer.text.startswith("Interrupted, outcome unknown")  # may have run
    assert plan.lease is not None
    plan.lease.release()
    store.close()


def test_this_host_is_named_in_the_owner() -> None:
    assert current_owner().startswith(socket.gethostname() + ":")
