"""A suspended run in the SQLite store: what waits is stored, the lease is free, it resumes once.

A run recorded with a `SessionRecorder` suspends; the store (reopened, as
another process would) rebuilds its `Suspension` through `prepare_resume`;
`Agent.resume` with the plan's suspension runs the rest; a second resume
finds nothing waiting; a session another owner holds is refused; a resumed
run that dies keeps what the suspended run had finished. Side effects are
counted on disk. Both backends.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from sessions_support import DEAD_OWNER

from toolweave._exceptions import SessionBusyError, UsageError
from toolweave.events import CompletionReason
from toolweave.execution import PermissionRules
from toolweave.loop import Agent, AgentConfig
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.sessions import (
    CallState,
    SessionLease,
    SessionRecorder,
    SQLiteSessionStore,
    prepare_resume,
)
from toolweave.tools import Access, Concurrency, Tool, tool

pytestmark = pytest.mark.anyio


def _tools(log: Path) -> list[Tool]:
    def mark(tag: str) -> str:
        with log.open("a") as f:
            f.write(tag + "\n")
        return f"did {tag}"

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def free(tag: str) -> str:
        """Runs without asking."""
        return mark(tag)

    @tool
    async def guarded(tag: str) -> str:
        """Needs approval (SEQUENTIAL: a barrier)."""
        return mark(tag)

    return [free, guarded]


def _model() -> ScriptedModel:
    return ScriptedModel(
        [
            ModelResponse(
                [
                    ToolCall("a", "free", {"tag": "a"}),
                    ToolCall("b", "guarded", {"tag": "b"}),
                    ToolCall("c", "guarded", {"tag": "c"}),
                ],
                StopReason.TOOL_USE,
                Usage(10, 5),
            ),
            ModelResponse([Text("done")], StopReason.END_TURN, Usage(10, 5)),
        ]
    )


def _agent(log: Path, model: ScriptedModel) -> Agent:
    config = AgentConfig(permissions=PermissionRules(ask=["guarded"]), on_ask="suspend")
    return Agent(model, _tools(log), config=config)


def _ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


async def _suspend(tmp_path: Path) -> tuple[Path, str, Path]:
    """Run until it suspends; the store is closed after (the process is gone)."""
    db, log = tmp_path / "s.db", tmp_path / "ran.log"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace=str(tmp_path), model="m", title="go").id
    recorder = SessionRecorder(store, sid, model="m")
    with anyio.fail_after(30):
        result = await _agent(log, _model()).run("go", recorder=recorder)
    assert result.completion_reason is CompletionReason.SUSPENDED
    assert [p.key for p in result.pending] == ["1.1"]
    assert recorder.failure is None
    assert store.lease(sid) is None  # released: another process may resume
    session = store.find_session(sid)
    assert session.status == "suspended"
    calls = {c.call.ref: c for c in store.calls(sid)}
    assert calls["1.0"].state is CallState.FINISHED
    assert calls["1.1"].state is CallState.WAITING  # pending: never running
    assert calls["1.1"].running_at is None and calls["1.1"].result is None
    store.close()
    return db, sid, log


async def test_a_stored_suspension_resumes_in_a_new_store_connection_once(
    tmp_path: Path,
) -> None:
    db, sid, log = await _suspend(tmp_path)
    assert _ran(log) == ["a"]  # c waits behind b (both barriers): it never started
    store = SQLiteSessionStore(db)
    plan = prepare_resume(store, sid)
    suspension = plan.suspension
    assert suspension is not None and plan.lease is not None
    assert [(p.key, p.tool, dict(p.input)) for p in suspension.pending] == [
        ("1.1", "guarded", {"tag": "b"})
    ]
    assert sorted(suspension.done) == ["1.0"]
    assert suspension.done["1.0"].text == "did a"
    recorder = SessionRecorder(store, sid, model="m", lease=plan.lease)
    agent = _agent(log, _model_after_resume())
    with anyio.fail_after(30):
        result = await agent.resume(suspension, {"1.1": "allow"}, recorder=recorder)
    # c asks too once b ran: the run suspends again, keeping a and b
    assert result.completion_reason is CompletionReason.SUSPENDED, result.detail
    assert [p.key for p in result.pending] == ["1.2"]
    assert _ran(log) == ["a", "b"]
    assert store.lease(sid) is None
    again = prepare_resume(store, sid)
    assert again.suspension is not None
    assert sorted(again.suspension.done) == ["1.0", "1.1"]  # across both runs
    recorder = SessionRecorder(store, sid, model="m", lease=again.lease)
    with anyio.fail_after(30):
        final = await agent.resume(again.suspension, {"1.2": "deny"}, recorder=recorder)
    assert final.completion_reason is CompletionReason.COMPLETED, final.detail
    assert _ran(log) == ["a", "b"]  # c denied: never ran
    stored = store.messages(sid)
    texts = [r.text for r in stored[2].tool_results]
    assert texts[:2] == ["did a", "did b"] and "denied by the user" in texts[2]
    assert store.find_session(sid).status == "completed"
    # resumed already: nothing waits any more, and a stale decision is refused
    with pytest.raises(Exception, match="completed; give a prompt"):
        prepare_resume(store, sid)
    assert store.lease(sid) is None
    store.close()


def _model_after_resume() -> ScriptedModel:
    return ScriptedModel(
        [ModelResponse([Text("done")], StopReason.END_TURN, Usage(10, 5))]
    )


async def test_a_suspended_session_held_by_another_owner_is_refused(
    tmp_path: Path,
) -> None:
    db, sid, log = await _suspend(tmp_path)
    store = SQLiteSessionStore(db)
    other = SessionLease.acquire(store, sid, owner="another-host.example:1")
    with pytest.raises(SessionBusyError):
        prepare_resume(store, sid)
    other.release()
    plan = prepare_resume(store, sid)
    assert plan.suspension is not None
    # a second resume in this process while the first holds the lease
    with pytest.raises(SessionBusyError):
        prepare_resume(store, sid, owner="another-host.example:2")
    assert plan.lease is not None
    plan.lease.release()
    assert _ran(log) == ["a"]
    store.close()


async def test_a_prompt_for_a_suspended_session_is_refused_until_decided(
    tmp_path: Path,
) -> None:
    db, sid, _log = await _suspend(tmp_path)
    store = SQLiteSessionStore(db)
    with pytest.raises(UsageError, match="calls wait for a decision"):
        prepare_resume(store, sid, prompt="something else")
    assert store.lease(sid) is None  # released on the refusal
    store.close()


async def test_a_resumed_run_that_died_keeps_what_the_suspended_run_finished(
    tmp_path: Path,
) -> None:
    """A crash after the resume began: a's stored result answers it, never 'outcome unknown'."""
    db, sid, _log = await _suspend(tmp_path)
    store = SQLiteSessionStore(db)
    # a resumed run that died at once: its run row RUNNING, owner dead
    SessionLease.acquire(store, sid, owner=DEAD_OWNER)
    store.begin_run(
        sid, prompt="[toolweave] resumed", model="m", owner=DEAD_OWNER, write_ahead=True
    )
    plan = prepare_resume(store, sid)
    assert plan.suspension is None  # the last run is the dead resume
    answers = plan.history[-1].tool_results
    assert answers[0].text == "did a" and not answers[0].is_error
    assert answers[1].is_error and answers[2].is_error
    assert plan.lease is not None
    plan.lease.release()
    store.close()
