"""`SuspendPoint` through the runner and the real Dispatcher: an ask nobody can answer.

With a suspend point enabled and no ask handler, a call that must ask does not
run and is not denied: it is pending until nothing but pending calls is in
flight; then the batch suspends (the pending call gets the placeholder no
transcript receives), and every call the scheduler still starts is held, never
run. A resume's decisions answer the asks instead of a handler (allow, deny,
always; an "always" carried in covers the next ask). A halt while a call waits,
or before its ask, answers it "not run". The batch listeners feed the point
its counts, as the loop's batch does. Both backends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import pytest
from lifecycle_helpers import Events, call, make_state, registry_with

from toolweave.events import Event, PermissionAnswered, PermissionAsked
from toolweave.execution import Decision, PermissionRules, SuspendPoint, ToolRunner
from toolweave.messages import ToolCall, ToolResult
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken
from toolweave.tools import Access, Concurrency, tool

pytestmark = pytest.mark.anyio

ran: list[str] = []
released = anyio.Event()


@tool(name="edit", access=lambda args: Access(writes=[f"k:{args['key']}"]))
async def edit(key: str) -> str:
    """A write the rules always ask about."""
    ran.append(f"edit {key}")
    return f"edited {key}"


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access(reads=["k:other"]))
async def slow() -> str:
    """Runs until the test releases it (a call still in flight)."""
    ran.append("slow")
    await gate.wait()
    return "slow ran"


class _Gate:
    def __init__(self) -> None:
        self.event: anyio.Event | None = None

    async def wait(self) -> None:
        assert self.event is not None
        await self.event.wait()


gate = _Gate()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()
    gate.event = anyio.Event()


def _runner(
    tmp_path: Path,
    point: SuspendPoint,
    events: Callable[[Event], None],
    halt: InterruptToken | None = None,
) -> ToolRunner:
    return ToolRunner(
        registry_with(edit, slow),
        state=make_state(tmp_path),
        permissions=PermissionRules(ask=["edit"]),
        on_event=events,
        interrupt=halt,
        suspend=point,
    )


async def _batch(
    runner: ToolRunner,
    calls: Sequence[ToolCall],
    done: dict[str, anyio.Event] | None = None,
) -> list[ToolResult]:
    """The batch as the loop runs it: the listeners feed the point its counts."""
    point = runner.suspend_point
    assert point is not None

    def completed(item: ToolCall, result: ToolResult) -> None:
        point.completed(item)
        if done is not None and item.id in done:
            done[item.id].set()

    config = ConcurrencyConfig(max_concurrency=8, default_tool_timeout=None)
    async with Dispatcher(config) as dispatcher:
        return await dispatcher.dispatch(
            calls,
            registry_with(edit, slow),
            runner,
            on_started=lambda item: point.started(),
            on_completed=completed,
        )


def _answers(events: Events) -> list[tuple[str, str]]:
    return [(e.call_id, e.answer) for e in events.of(PermissionAnswered)]


NOT_RUN_YET = (
    "Not run yet: the call to 'edit' waits for a person's approval; the run"
    " is suspended and runs it (or answers it denied) when resumed."
)
STOPPED = (
    "Not run: the run was stopped while this call waited for permission."
    " The tool 'edit' was never started."
)


async def test_an_ask_with_nobody_to_answer_suspends_and_holds_what_follows(
    tmp_path: Path,
) -> None:
    point = SuspendPoint(enabled=True)
    events = Events()
    runner = _runner(tmp_path, point, events)
    gate_event = gate.event
    assert gate_event is not None
    gate_event.set()  # `slow` finishes at once here
    calls = [
        call("c0", "slow"),
        call("c1", "edit", key="a"),
        call("c2", "edit", key="b"),  # asks too: pending beside c1
        call("c3", "edit", key="a"),  # conflicts with c1: waits for it
    ]
    results = await _batch(runner, calls)
    assert point.tripped
    assert sorted(p.key for p in point.pending) == ["c1", "c2"]
    [first] = [p for p in point.pending if p.key == "c1"]
    assert first.tool == "edit" and first.input == {"key": "a"}
    assert first.rules == ()  # an ask rule asked: no rule suggests itself
    assert point.held == ("c3",)
    assert all(point.waits(c) for c in calls[1:]) and not point.waits(calls[0])
    assert results[0].text == "slow ran" and not results[0].is_error
    assert [r.text for r in results[1:3]] == [NOT_RUN_YET, NOT_RUN_YET]
    assert results[3].is_error and results[3].synthetic
    assert results[3].text.startswith("Not run yet: the run is suspended")
    assert ran == ["slow"]  # nothing that asked, nothing held, ran
    assert sorted(_answers(events)) == [("c1", "suspended"), ("c2", "suspended")]
    # once suspended, nothing starts: the runner holds any later call at once
    late = await runner(call("c4", "echo", text="late"))
    assert late.synthetic and "was not started" in late.text
    assert point.held == ("c3", "c4")


async def test_without_suspension_nobody_to_ask_denies(tmp_path: Path) -> None:
    point = SuspendPoint(enabled=False)
    events = Events()
    [result] = await _batch(
        _runner(tmp_path, point, events), [call("c1", "edit", key="a")]
    )
    assert result.is_error and not result.synthetic
    assert "Permission denied" in result.text or "asks" in result.text
    assert not point.tripped and point.pending == () and ran == []


async def test_a_halt_while_a_call_is_pending_answers_it_not_run(
    tmp_path: Path,
) -> None:
    point = SuspendPoint(enabled=True)
    events = Events()
    halt = InterruptToken()
    asked = anyio.Event()

    def on_event(event: Event) -> None:
        events(event)
        if isinstance(event, PermissionAsked):
            asked.set()

    runner = _runner(tmp_path, point, on_event, halt)
    done = {"c1": anyio.Event()}
    results: list[ToolResult] = []

    async def run() -> None:
        results.extend(
            await _batch(
                runner, [call("c0", "slow"), call("c1", "edit", key="a")], done
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await asked.wait()  # c1 is pending; c0 still runs, so no suspension yet
        assert not point.tripped and [p.key for p in point.pending] == ["c1"]
        halt.set()
        await done["c1"].wait()
        assert point.pending == () and not point.tripped
        gate_event = gate.event
        assert gate_event is not None
        gate_event.set()
    assert results[0].text == "slow ran"
    assert results[1].text == STOPPED and results[1].synthetic
    assert _answers(events) == [("c1", "cancelled")]
    assert not point.tripped and point.held == () and ran == ["slow"]


async def test_a_halt_as_the_batch_suspends_keeps_the_suspension(
    tmp_path: Path,
) -> None:
    """The last running call ends and the run halts in the same step: suspended wins."""
    point = SuspendPoint(enabled=True)
    halt = InterruptToken()
    asked = anyio.Event()
    events = Events()

    def on_event(event: Event) -> None:
        events(event)
        if isinstance(event, PermissionAsked):
            asked.set()

    runner = _runner(tmp_path, point, on_event, halt)
    results: list[ToolResult] = []

    def completed(item: ToolCall, result: ToolResult) -> None:
        point.completed(item)  # releases the pending c1 ...
        if item.id == "c0":
            halt.set()  # ... and the halt cuts its wait before it wakes

    async def run() -> None:
        config = ConcurrencyConfig(max_concurrency=8, default_tool_timeout=None)
        async with Dispatcher(config) as dispatcher:
            results.extend(
                await dispatcher.dispatch(
                    [call("c0", "slow"), call("c1", "edit", key="a")],
                    registry_with(edit, slow),
                    runner,
                    on_started=lambda item: point.started(),
                    on_completed=completed,
                )
            )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await asked.wait()
        gate_event = gate.event
        assert gate_event is not None
        gate_event.set()
    assert point.tripped and [p.key for p in point.pending] == ["c1"]
    assert results[0].text == "slow ran"
    assert results[1].text == NOT_RUN_YET
    assert _answers(events) == [("c1", "suspended")] and ran == ["slow"]


async def test_a_halt_before_the_ask_answers_not_run_without_asking(
    tmp_path: Path,
) -> None:
    halt = InterruptToken()
    halt.set()
    for point in (
        SuspendPoint(enabled=True),
        SuspendPoint(enabled=True, decisions={"c1": "allow"}),
    ):
        events = Events()
        result = await _runner(tmp_path, point, events, halt)(
            call("c1", "edit", key="a")
        )
        assert result.text == STOPPED and result.synthetic
        assert events.of(PermissionAsked) == [] and ran == []
        assert point.pending == () and not point.tripped


@pytest.mark.parametrize(
    ("decision", "runs"), [("allow", True), ("always", True), ("deny", False)]
)
async def test_a_resumes_decision_answers_the_ask(
    tmp_path: Path, decision: Decision, runs: bool
) -> None:
    point = SuspendPoint(enabled=True, decisions={"c1": decision})
    events = Events()
    runner = _runner(tmp_path, point, events)
    result = await runner(call("c1", "edit", key="a"))
    assert _answers(events) == [("c1", decision)]
    assert [e.call_id for e in events.of(PermissionAsked)] == ["c1"]
    if runs:
        assert (result.text, result.is_error) == ("edited a", False)
        assert ran == ["edit a"]
    else:
        assert result.is_error and result.text.startswith(
            "Permission denied by the user:"
        )
        assert ran == []
    assert runner.always == ((("edit", None),) if decision == "always" else ())
    # the decision answers one ask only: the next call of the tool suspends
    again = await runner(call("c2", "edit", key="b"))
    if decision == "always":
        assert again.text == "edited b"  # covered by the "always" just given
    else:
        assert again.text == NOT_RUN_YET and point.tripped


async def test_an_always_carried_in_covers_the_ask(tmp_path: Path) -> None:
    point = SuspendPoint(enabled=True, always=(("edit", None),))
    events = Events()
    runner = _runner(tmp_path, point, events)
    assert runner.always == (("edit", None),)
    result = await runner(call("c1", "edit", key="a"))
    assert result.text == "edited a" and ran == ["edit a"]
    assert events.of(PermissionAsked) == [] and not point.tripped


def test_a_decision_that_is_none_of_allow_deny_always_is_refused() -> None:
    with pytest.raises(ValueError, match=r"call c1 is 'maybe'; expected one of"):
        SuspendPoint(enabled=True, decisions={"c1": "maybe"})  # type: ignore[dict-item]
