"""The recorder attached to a run: writes off the loop, in order, and a start barrier.

"Not run" is true by construction: a recorded call's code does not begin until
its RUNNING row is durable, which each tool here checks for itself through a
second connection (as another process would see the file).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from sessions_support import DEAD_OWNER, Bench, call, say, use

from toolweave.events import (
    MessageAppended,
    ReasoningDelta,
    RunFinished,
    TextDelta,
    ToolResultReady,
)
from toolweave.loop import Agent
from toolweave.messages import ToolCall
from toolweave.models import ScriptedModel
from toolweave.sessions import (
    CallState,
    RunState,
    SessionRecorder,
    SQLiteSessionStore,
    prepare_resume,
)
from toolweave.tools import Access, Concurrency, tool

pytestmark = pytest.mark.anyio


async def test_no_call_starts_before_its_running_row_is_on_disk(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    seen: dict[str, str | None] = {}
    inside, peak = 0, 0
    both = anyio.Event()

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def probe(name: str) -> str:
        """Look at the store from outside, as another process would."""
        nonlocal inside, peak
        reader = SQLiteSessionStore(db, read_only=True)
        states = {c.call.id: c.state for c in reader.calls(sid)}
        reader.close()
        seen[name] = states.get(name) and states[name].value
        inside += 1
        peak = max(peak, inside)
        if inside == 2:
            both.set()
        await both.wait()  # the two overlap: the barrier holds no call back
        inside -= 1
        return name

    model = ScriptedModel(
        [
            use(
                ToolCall("a", "probe", {"name": "a"}),
                ToolCall("b", "probe", {"name": "b"}),
            ),
            use(ToolCall("c", "probe", {"name": "c"})),
            say("done"),
        ]
    )
    recorder = SessionRecorder(store, sid, model="scripted")
    result = await Agent(model, [probe]).run("go", recorder=recorder)
    assert seen == {"a": "running", "b": "running", "c": "running"}
    assert peak == 2  # overlap kept
    assert result.output == "done" and recorder.failure is None
    assert store.runs(sid)[0].write_ahead is True
    store.close()


async def test_every_event_a_consumer_was_shown_is_already_on_disk(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    bench.release.set()
    model = ScriptedModel(
        [use(call("a", "look", key="x"), call("b", "touch", key="y")), say("done")],
        chunk_delay=0.01,
    )
    recorder = SessionRecorder(store, sid, model="scripted")
    reader = SQLiteSessionStore(db, read_only=True)
    checked = 0
    emitted: list[str] = []
    async with Agent(model, bench.tools()).open_run("go", recorder=recorder) as run:
        shown = 0
        async for event in run.events():
            if not isinstance(event, TextDelta | ReasoningDelta):
                emitted.append(type(event).__name__)
            shown += 1
            await recorder.wait_durable(shown)
            if isinstance(event, MessageAppended):  # shown now: on disk already
                assert len(reader.messages(sid)) == event.index + 1
                checked += 1
            if isinstance(event, ToolResultReady):
                states = {c.call.id: c.state for c in reader.calls(sid)}
                assert states[event.call.id] is CallState.FINISHED
                checked += 1
    reader.close()
    assert checked >= 5
    assert [e.kind for e in store.events(sid)] == emitted  # every event, in order
    store.close()


async def test_a_run_cancelled_from_outside_is_abandoned_where_it_stood(
    tmp_path: Path,
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    model = ScriptedModel(
        [
            use(
                call("fast", "look", key="x"),
                call("hold", "slow", key="y"),
                call("after", "look", key="y"),  # waits for `hold`
            )
        ]
    )
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: Agent(model, bench.tools()).run("go", recorder=recorder))
        await bench.slow_started.wait()
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    (run,) = store.runs(sid)
    assert run.state is RunState.ABANDONED and "cancelled" in run.detail
    assert store.lease(sid) is None  # released on the way out
    states = {c.call.id: c.state for c in store.calls(sid)}
    assert states["hold"] is CallState.RUNNING
    assert states["after"] in (CallState.PENDING, CallState.WAITING)
    plan = prepare_resume(store, sid)
    assert [r.call.id for r in plan.lost] == ["hold"]
    assert [r.call.id for r in plan.skipped] == ["after"]  # its start was never written
    assert bench.calls["look y"] == 0
    assert plan.lease is not None
    plan.lease.release()
    store.close()


async def test_a_hand_fed_recorder_cannot_know_what_did_not_start(
    tmp_path: Path,
) -> None:
    """Fed after the fact, a crash leaves calls whose start may be unrecorded: unknown."""
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    model = ScriptedModel(
        [use(call("hold", "slow", key="y"), call("after", "look", key="y"))]
    )
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)

    async def consume() -> None:
        async for event in Agent(model, bench.tools()).run_stream("go"):
            recorder.record(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await bench.slow_started.wait()
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()  # nothing after this reaches the store: a crash
    assert store.runs(sid)[0].write_ahead is False
    plan = prepare_resume(store, sid)
    assert [r.call.id for r in plan.lost] == ["hold", "after"] and plan.skipped == ()
    assert plan.lease is not None
    plan.lease.release()
    store.close()


async def test_the_finished_event_of_a_run_is_stored(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    events = [
        e
        async for e in Agent(ScriptedModel([say("hi")])).run_stream(
            "go", recorder=recorder
        )
    ]
    assert isinstance(events[-1], RunFinished)
    assert store.events(sid)[-1].kind == "RunFinished"
    assert store.find_session(sid).status == "completed"
    with pytest.raises(Exception, match="records one run"):
        async with recorder.recording():
            pass
    store.close()
