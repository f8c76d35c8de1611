"""Resume after a crash: every stored message kept, no started call run again."""

from __future__ import annotations

from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest
from sessions_support import DEAD_OWNER, Bench, call, say, use

from toolweave._exceptions import SessionBusyError, StoreError
from toolweave.events import ModelCallStarted, RunFinished
from toolweave.loop import Agent, transcript_problems
from toolweave.messages import Message, ModelResponse
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.sessions import (
    RESUME_PROMPT,
    CallState,
    RunState,
    SessionRecorder,
    SQLiteSessionStore,
    lost_result,
    prepare_resume,
    skipped_result,
)
from toolweave.tools import ToolRegistry

pytestmark = pytest.mark.anyio

FIRST_BATCH = use(
    call("fast", "look", key="x"),
    call("hold", "slow", key="y"),
    call("after", "look", key="y"),  # reads what `hold` writes: waits for it
    text="Working.",
)


async def _crash_mid_batch(
    tmp_path: Path, bench: Bench, crash_copy: Any
) -> tuple[SQLiteSessionStore, str]:
    """Run (recorded) until `hold` is running and `fast` is done, then crash.

    The crash: the store as a process killed at that instant leaves it
    (`crash_copy`); that copy is returned.
    """
    store = SQLiteSessionStore(tmp_path / "s.db")
    registry = ToolRegistry(bench.tools())
    sid = store.create_session(workspace="/w", model="scripted", title="task").id
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    agent = Agent(ScriptedModel([FIRST_BATCH]), registry)

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: agent.run("do the task", recorder=recorder))
        await bench.slow_started.wait()
        await anyio.wait_all_tasks_blocked()
        await recorder.flush()
        crashed = crash_copy(store, tmp_path / "crashed.db")
        tg.cancel_scope.cancel()  # nothing after this point reaches the copy
    store.close()
    return crashed, sid


async def test_resume_answers_the_cut_batch_and_never_reruns_a_started_call(
    tmp_path: Path, crash_copy: Any
) -> None:
    bench = Bench()
    store, sid = await _crash_mid_batch(tmp_path, bench, crash_copy)
    assert store.find_session(sid).status == "crashed"
    before = store.messages(sid)
    assert [m.role for m in before] == ["user", "assistant"]

    plan = prepare_resume(store, sid[:8])
    assert plan.prompt == RESUME_PROMPT
    assert [r.call.id for r in plan.lost] == ["hold"]
    assert [r.call.id for r in plan.skipped] == ["after"]
    assert list(plan.history[:2]) == before  # no stored message lost
    answer = plan.history[2]
    assert [r.call_id for r in answer.tool_results] == ["fast", "hold", "after"]
    fast, hold, after = answer.tool_results
    assert fast.text == "value of x" and not fast.is_error
    assert hold == lost_result(FIRST_BATCH.tool_calls[1])
    assert "outcome unknown" in hold.text and hold.synthetic
    assert after == skipped_result(FIRST_BATCH.tool_calls[2])
    assert transcript_problems(plan.history) == []
    assert store.messages(sid) == list(plan.history)  # the answer is durable already
    states = {c.call.id: c.state for c in store.calls(sid)}
    assert states == {
        "fast": CallState.FINISHED,
        "hold": CallState.LOST,
        "after": CallState.SKIPPED,
    }

    seen: list[ModelRequest] = []

    def final(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return say("Checked; all good.")

    registry = ToolRegistry(bench.tools())
    recorder = SessionRecorder(store, sid, model="scripted", lease=plan.lease)
    events = []
    async for event in Agent(ScriptedModel([final]), registry).run_stream(
        plan.prompt, history=plan.history, recorder=recorder
    ):
        events.append(event)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.output == "Checked; all good."
    assert list(seen[0].messages[: len(plan.history)]) == list(plan.history)
    assert bench.calls == {
        "look x": 1,
        "slow y": 1,
    }  # nothing ran again; `after` never ran
    assert store.messages(sid) == list(finished.messages)
    assert store.messages(sid)[: len(plan.history)] == list(plan.history)
    runs = store.runs(sid)
    assert [r.state for r in runs] == [RunState.RUNNING, RunState.FINISHED]
    assert store.find_session(sid).status == "completed"


async def test_a_second_resume_changes_nothing_more(
    tmp_path: Path, crash_copy: Any
) -> None:
    store, sid = await _crash_mid_batch(tmp_path, Bench(), crash_copy)
    first = prepare_resume(store, sid)
    with pytest.raises(SessionBusyError, match="is being run by"):
        prepare_resume(store, sid)  # the first plan holds the session
    assert first.lease is not None
    first.lease.release()  # no run followed it
    second = prepare_resume(store, sid)
    assert second.history == first.history
    assert second.lost == () and second.skipped == ()
    assert len(store.messages(sid)) == 3


async def test_an_unanswered_prompt_is_sent_again_not_duplicated(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    async with Agent(ScriptedModel([say("never seen")])).open_run(
        "the question"
    ) as run:
        events = run.events()
        async with aclosing(events):
            async for event in events:
                recorder.record(event)
                if isinstance(event, ModelCallStarted):
                    break  # the process dies while the model is thinking
    plan = prepare_resume(store, sid)
    assert plan.prompt == "the question" and plan.history == ()
    assert store.messages(sid) == []
    assert store.messages(sid, archived=True) == [Message("user", "the question")]
    again = SessionRecorder(store, sid, model="scripted")
    async for event in Agent(ScriptedModel([say("answer")])).run_stream(plan.prompt):
        again.record(event)
    assert [m.text for m in store.messages(sid)] == ["the question", "answer"]


async def test_resume_refuses_live_and_finished_sessions(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    async for event in Agent(ScriptedModel([say("done")])).run_stream("q"):
        recorder.record(event)
    with pytest.raises(StoreError, match="completed; give a prompt"):
        prepare_resume(store, sid)
    assert prepare_resume(store, sid, prompt="and now?").prompt == "and now?"
    live = store.create_session(workspace="/w", model="scripted", title="t").id
    store.append_message(live, Message("user", "q"), run=1)
    store.begin_run(live, prompt="q", model="scripted", owner=recorder._owner)
    with pytest.raises(StoreError, match="live process"):
        prepare_resume(store, live)
    empty = store.create_session(workspace="/w", model="scripted", title="t").id
    with pytest.raises(StoreError, match="no messages"):
        prepare_resume(store, empty)
