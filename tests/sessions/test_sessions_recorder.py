"""SessionRecorder against real Agent runs: everything is durable as the run goes."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from sessions_support import Bench, call, say, use

from toolweave._exceptions import ModelConnectionError
from toolweave.events import Event, RunFinished, TextDelta
from toolweave.execution import Hooks, StopDecision, StopInput
from toolweave.loop import Agent, AgentConfig, transcript_problems
from toolweave.messages import Message, ModelResponse, StopReason, Text, Usage
from toolweave.models import RetryPolicy, ScriptedModel, ScriptStep
from toolweave.scheduling import classify
from toolweave.sessions import (
    AccessRecord,
    CallState,
    RunState,
    SessionRecorder,
    SQLiteSessionStore,
)
from toolweave.tools import ToolRegistry

pytestmark = pytest.mark.anyio


def _recorder(
    store: SQLiteSessionStore, registry: ToolRegistry, **kwargs: object
) -> SessionRecorder:
    sid = store.create_session(workspace="/w", model="scripted", title="task").id

    def describe(c: object) -> AccessRecord:
        access = classify(c, registry).access  # type: ignore[arg-type]
        return AccessRecord(access.reads, access.writes)

    return SessionRecorder(store, sid, model="scripted", describe=describe, **kwargs)  # type: ignore[arg-type]


async def _run(
    agent: Agent, recorder: SessionRecorder, prompt: str = "go"
) -> list[Event]:
    events = []
    async for event in agent.run_stream(prompt):
        recorder.record(event)
        events.append(event)
    return events


async def test_a_finished_run_is_stored_whole(tmp_path: Path) -> None:
    bench = Bench()
    registry = ToolRegistry(bench.tools())
    model = ScriptedModel(
        [
            use(
                call("a", "look", key="x"), call("b", "look", key="y"), text="Looking."
            ),
            use(call("c", "touch", key="x")),
            say("All done."),
        ],
        chunk_delay=0.01,
    )
    store = SQLiteSessionStore(tmp_path / "s.db")
    recorder = _recorder(
        store, registry, price=lambda model, usage: usage.input_tokens / 1000
    )
    events = await _run(Agent(model, registry), recorder)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    sid = recorder.session_id
    assert store.messages(sid) == list(finished.messages)
    assert (
        store.messages(sid, archived=True) == []
    )  # nothing the recorder wrote was wrong
    calls = store.calls(sid)
    assert [(c.iteration, c.index, c.call.id, c.state) for c in calls] == [
        (1, 0, "a", CallState.FINISHED),
        (1, 1, "b", CallState.FINISHED),
        (2, 0, "c", CallState.FINISHED),
    ]
    results = {r.call_id: r for m in finished.messages for r in m.tool_results}
    for record in calls:
        assert record.result == results[record.call.id]
        assert record.admitted_at is not None and record.running_at is not None
        assert record.finished_at is not None
        assert 0 <= record.admitted_at <= record.running_at <= record.finished_at
    assert calls[0].access == AccessRecord(("k:x",), ())
    assert calls[2].access == AccessRecord((), ("k:x",))
    models = store.model_calls(sid)
    assert [m.iteration for m in models] == [1, 2, 3]
    assert all(m.finished_at is not None for m in models)
    # The first streamed text marks the first chunk; iteration 2 streamed no text.
    assert [m.first_chunk_at is not None for m in models] == [True, False, True]
    assert models[0].stop_reason == "tool_use" and models[0].usage == Usage(20, 8)
    kinds = [e.kind for e in store.events(sid)]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert "TextDelta" not in kinds and any(isinstance(e, TextDelta) for e in events)
    assert kinds.count("ToolResultReady") == 3
    (run,) = store.runs(sid)
    assert run.state is RunState.FINISHED and run.reason is finished.reason
    assert run.usage == finished.usage
    info = store.find_session(sid)
    assert info.status == "completed" and info.messages == len(finished.messages)


async def test_everything_up_to_the_call_in_flight_is_durable_mid_run(
    tmp_path: Path,
) -> None:
    bench = Bench()
    registry = ToolRegistry(bench.tools())
    model = ScriptedModel(
        [use(call("fast", "look", key="x"), call("hold", "slow", key="y")), say("ok")]
    )
    store = SQLiteSessionStore(tmp_path / "s.db")
    recorder = _recorder(store, registry)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_run, Agent(model, registry), recorder)
        await bench.slow_started.wait()
        await anyio.wait_all_tasks_blocked()
        # A second connection, as another process would open it.
        reader = SQLiteSessionStore(store.path)
        sid = recorder.session_id
        messages = reader.messages(sid)
        assert [m.role for m in messages] == ["user", "assistant"]
        assert [c.id for c in messages[1].tool_calls] == ["fast", "hold"]
        states = {c.call.id: c for c in reader.calls(sid)}
        assert states["fast"].state is CallState.FINISHED
        assert (
            states["fast"].result is not None
            and states["fast"].result.text == "value of x"
        )
        assert (
            states["hold"].state is CallState.RUNNING and states["hold"].result is None
        )
        assert reader.runs(sid)[0].state is RunState.RUNNING
        reader.close()
        bench.release.set()
    assert store.find_session(recorder.session_id).status == "completed"


async def test_a_stop_hook_continuation_is_stored_as_the_model_saw_it(
    tmp_path: Path,
) -> None:
    hooks = Hooks()
    asked: list[bool] = []

    @hooks.stop
    def once_more(data: StopInput) -> StopDecision | None:
        asked.append(data.stop_hook_active)
        return None if data.stop_hook_active else StopDecision(reason="check the tests")

    model = ScriptedModel([say("first"), say("second")])
    store = SQLiteSessionStore(tmp_path / "s.db")
    recorder = _recorder(store, ToolRegistry([]))
    async for event in Agent(model, config=AgentConfig(hooks=hooks)).run_stream("go"):
        if not isinstance(event, RunFinished):  # the process "dies" before the end
            recorder.record(event)
    stored = store.messages(recorder.session_id)
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]
    assert stored[2].text == "A stop hook asked you to continue:\ncheck the tests"
    assert stored[:3] == list(model.requests[1].messages)  # exactly what was sent
    assert transcript_problems(stored) == []
    assert asked == [False, True]


async def test_a_retried_stream_discards_its_eagerly_started_call(
    tmp_path: Path,
) -> None:
    bench = Bench()
    registry = ToolRegistry(bench.tools())
    # The call streams first and runs while the text is delayed; then the stream is cut.
    response = ModelResponse(
        [call("a", "look", key="x"), Text("x")], StopReason.TOOL_USE
    )
    cut = ModelConnectionError("cut")
    model = ScriptedModel(
        [
            ScriptStep(response, chunk_delay=0.05, fail_after_chunks=2, error=cut),
            response,
            say("done"),
        ]
    )
    config = AgentConfig(retry=RetryPolicy(initial_delay=0.01, jitter=0.0))
    store = SQLiteSessionStore(tmp_path / "s.db")
    recorder = _recorder(store, registry)
    events = await _run(Agent(model, registry, config=config), recorder)
    assert isinstance(events[-1], RunFinished)
    calls = store.calls(recorder.session_id)
    assert [(c.call.id, c.attempt, c.state) for c in calls] == [
        ("a", 1, CallState.DISCARDED),
        ("a", 2, CallState.FINISHED),
    ]
    assert calls[0].result is not None  # it ran, but its attempt was void
    assert bench.calls["look x"] == 2
    assert store.messages(recorder.session_id) == list(events[-1].messages)
    assert [m.role for m in events[-1].messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_store_messages_survive_a_second_run_appended(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    recorder = _recorder(store, ToolRegistry([]))
    await _run(Agent(ScriptedModel([say("one")])), recorder, "first")
    history = store.messages(recorder.session_id)
    again = SessionRecorder(store, recorder.session_id, model="scripted")
    events = []
    async for event in Agent(ScriptedModel([say("two")])).run_stream(
        "second", history=history
    ):
        again.record(event)
        events.append(event)
    assert again.run == 2
    assert store.messages(recorder.session_id) == [
        Message("user", "first"),
        *history[1:],
        Message("user", "second"),
        events[-1].messages[-1],
    ]
    assert [r.run for r in store.runs(recorder.session_id)] == [1, 2]


async def test_a_history_the_store_does_not_hold_is_repaired_at_the_end(
    tmp_path: Path, allow_drift: None, caplog: pytest.LogCaptureFixture
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    recorder = _recorder(store, ToolRegistry([]))
    await _run(Agent(ScriptedModel([say("one")])), recorder, "first")
    earlier = store.messages(recorder.session_id)
    again = SessionRecorder(store, recorder.session_id, model="scripted")
    events = await _run(Agent(ScriptedModel([say("two")])), again, "second")
    finished = events[-1]
    assert isinstance(finished, RunFinished)  # a run that ignored the stored history
    drift = [r.getMessage() for r in caplog.records if r.name == "toolweave.sessions"]
    assert len(drift) == 2  # once when it began to drift, once at the end
    assert "history differs" in drift[0] and "storing the run's" in drift[1]
    assert store.messages(again.session_id) == list(finished.messages)
    archived = store.messages(again.session_id, archived=True)
    assert archived[:2] == earlier  # replaced, never deleted


def test_a_run_lost_before_its_first_event_is_recorded_as_abandoned(
    tmp_path: Path,
) -> None:
    from toolweave.sessions import SessionRecorder

    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="task").id
    assert store.find_session(sid).status == "new"
    recorder = SessionRecorder(store, sid, model="scripted")
    recorder.abandon("the worker died", prompt="task")
    recorder.abandon("again")  # idempotent
    assert store.find_session(sid).status == "abandoned"
    [run] = store.runs(sid)
    assert run.prompt == "task" and run.detail == "the worker died"
    store.close()
