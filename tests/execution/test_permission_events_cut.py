"""A permission wait cut short is still told as a wait, and the call still answered not run.

The permission stage tells each wait for the user (`PermissionAsked`, then
`PermissionAnswered` however it ends: issue 27, item 8) and the run's halt, a
run deadline or a cancel ends such a wait with a synthetic "not run" (the tool
never started). Both at once: every cut below ends the pair with ``cancelled``
and the result says "not run"; a call that reaches the stage after the halt is
answered the same way without being asked, so no wait is told for it. Through
the runner (`ToolRunner(interrupt=, deadline=, on_event=)`) and through
`tw.Agent` (an interrupt at the prompt, a CANCEL tool and a BLOCK tool alike);
both backends; order by rendezvous.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from lifecycle_helpers import Approvals, Events, call, never_answers

import toolweave as tw
from toolweave.events import Event, PermissionAnswered, PermissionAsked, ToolRunning
from toolweave.execution import (
    AskAnswer,
    PermissionRules,
    RunDeadline,
)
from toolweave.messages import ToolCall, ToolResult
from toolweave.models import ScriptedModel
from toolweave.scheduling import InterruptToken

pytestmark = pytest.mark.anyio


def _waits(events: Events) -> list[tuple[str, str]]:
    """(event, call id or answer) of the permission events, in order."""
    told: list[tuple[str, str]] = []
    for event in events.items:
        if isinstance(event, PermissionAsked):
            told.append(("asked", event.call_id))
        elif isinstance(event, PermissionAnswered):
            told.append((event.answer, event.call_id))
    return told


def _not_run(result: ToolResult) -> bool:
    return result.is_error and result.synthetic and result.text.startswith("Not run")


Cut = Callable[[InterruptToken, anyio.CancelScope], None]


def _halt(halt: InterruptToken, scope: anyio.CancelScope) -> None:
    halt.set()


def _cancel(halt: InterruptToken, scope: anyio.CancelScope) -> None:
    scope.cancel()


@pytest.mark.parametrize("cut", [_halt, _cancel], ids=["halt", "cancel"])
async def test_a_cut_wait_and_the_call_queued_behind_it_are_told_cancelled(
    approvals: Approvals, tmp_path: Path, cut: Cut
) -> None:
    """One call at the prompt, one waiting its turn: both waits end "cancelled"."""
    events = Events()
    halt = InterruptToken()
    asking = anyio.Event()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        asking.set()
        return await never_answers(call, reason)

    runner = approvals.runner(tmp_path, ask, events=events, halt=halt)
    results: dict[str, ToolResult] = {}

    async def one(call_id: str) -> None:
        results[call_id] = await runner(call(call_id, "guarded", n=1))

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")
            await asking.wait()
            await anyio.wait_all_tasks_blocked()  # the other one waits its turn
            cut(halt, scope)
    told = _waits(events)
    assert sorted(told[:2]) == [("asked", "a"), ("asked", "b")]
    assert sorted(told[2:]) == [("cancelled", "a"), ("cancelled", "b")]
    assert approvals.ran == [] and not events.of(ToolRunning)
    assert sorted(results) == ["a", "b"]
    assert all(_not_run(r) for r in results.values()), results


async def test_a_call_reaching_the_prompt_after_the_halt_is_not_told_a_wait(
    approvals: Approvals,
    tmp_path: Path,
) -> None:
    """Nobody was asked and nobody waited: no pair, and the call is answered not run."""
    events = Events()
    halt = InterruptToken()
    halt.set()
    asked: list[str] = []

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        asked.append(call.id)
        return "allow"

    runner = approvals.runner(tmp_path, ask, events=events, halt=halt)
    result = await runner(call("a", "guarded", n=1))
    assert _not_run(result) and asked == [] and approvals.ran == []
    assert _waits(events) == []


async def test_a_halt_as_the_answer_comes_back_is_cancelled_not_allow(
    approvals: Approvals,
    tmp_path: Path,
) -> None:
    """The handler said "allow" but the halt won: the event says what happened."""
    events = Events()
    halt = InterruptToken()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        halt.set()
        return "allow"

    runner = approvals.runner(tmp_path, ask, events=events, halt=halt)
    result = await runner(call("a", "guarded", n=1))
    assert _not_run(result) and approvals.ran == []
    assert _waits(events) == [("asked", "a"), ("cancelled", "a")]


async def test_a_run_deadline_at_the_prompt_ends_the_wait_cancelled(
    approvals: Approvals,
    tmp_path: Path,
) -> None:
    events = Events()
    runner = approvals.runner(
        tmp_path,
        never_answers,
        events=events,
        deadline=RunDeadline(anyio.current_time() + 0.05, "the test's bound"),
        halt=InterruptToken(),
    )
    result = await runner(call("a", "guarded", n=1))
    assert result.synthetic and result.text.startswith(
        "Not run: the test's bound ran out"
    ), result.text
    assert _waits(events) == [("asked", "a"), ("cancelled", "a")]


@pytest.mark.parametrize(
    ("answer", "told", "runs"),
    [("allow", "allow", True), ("deny", "deny", False), ("maybe", "failed", False)],
)
async def test_under_a_halt_token_and_a_deadline_an_answer_is_told_as_given(
    approvals: Approvals, tmp_path: Path, answer: str, told: str, runs: bool
) -> None:
    events = Events()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        return answer  # type: ignore[return-value]  # "maybe": a handler's mistake

    runner = approvals.runner(
        tmp_path,
        ask,
        events=events,
        deadline=RunDeadline(anyio.current_time() + 3600, "the test's bound"),
        halt=InterruptToken(),
    )
    result = await runner(call("a", "guarded", n=1))
    assert _waits(events) == [("asked", "a"), (told, "a")]
    assert (approvals.ran == [1]) is runs and not result.synthetic
    assert result.is_error is not runs


async def test_a_handler_answering_the_covered_word_is_not_approved(
    approvals: Approvals,
    tmp_path: Path,
) -> None:
    """The event says `approved` when an "always" covered a call; a handler that
    answers that word gave an invalid answer, and the call is denied."""
    events = Events()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        return "approved"  # type: ignore[return-value]

    runner = approvals.runner(tmp_path, ask, events=events)
    result = await runner(call("a", "guarded", n=1))
    assert approvals.ran == [] and result.is_error
    assert "the ask handler answered 'approved'" in result.text
    assert _waits(events) == [("asked", "a"), ("failed", "a")]


@pytest.mark.parametrize("interrupt", [tw.Interrupt.CANCEL, tw.Interrupt.BLOCK])
async def test_an_interrupt_at_the_prompt_through_the_agent(
    approvals: Approvals,
    interrupt: tw.Interrupt,
) -> None:
    """Whatever the tool's Interrupt behaviour, the wait ends at once, told cancelled."""
    asked = anyio.Event()

    async def never(call: tw.ToolCall, reason: str) -> AskAnswer:
        asked.set()
        return await never_answers(call, reason)

    @tw.tool(interrupt=interrupt, access=tw.Access(writes=["k:c"]))
    async def change() -> str:
        """A write that needs approval."""
        approvals.ran.append(0)
        return "changed"

    model = ScriptedModel(
        [
            tw.ModelResponse(
                [tw.ToolCall("c1", "change", {})], stop_reason=tw.StopReason.TOOL_USE
            )
        ]
    )
    config = tw.AgentConfig(permissions=PermissionRules(ask=["change"]), ask=never)
    agent = tw.Agent(model, [change], config=config)
    events: list[Event] = []
    result: tw.RunResult | None = None
    with anyio.fail_after(30):
        async with agent.open_run("go") as run:

            async def stop(when: Callable[[], Awaitable[None]]) -> None:
                await when()
                run.interrupt()

            async with anyio.create_task_group() as tg:
                tg.start_soon(stop, asked.wait)
                async for event in run.events():
                    events.append(event)
            result = await run.wait()
    answers = [e.answer for e in events if isinstance(e, PermissionAnswered)]
    assert answers == ["cancelled"] and approvals.ran == []
    assert result is not None
    results = [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]
    assert len(results) == 1 and _not_run(results[0]), results
    assert "never started" in results[0].text
