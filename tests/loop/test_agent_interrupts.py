"""Interrupts (per tool Interrupt behaviour) and steering, proved by rendezvous."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest
from loop_support import (
    Gate,
    add,
    assert_provider_valid,
    call,
    kinds,
    say,
    scripted,
    use,
)

from toolweave.events import CompletionReason, Event, LoopTransition, ModelCallStarted
from toolweave.loop import Agent, AgentRun
from toolweave.messages import Text
from toolweave.models import ScriptStep
from toolweave.tools import Concurrency, Interrupt

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def consumed(agent: Agent, events: list[Event]) -> AsyncIterator[AgentRun]:
    """Open a run whose events are collected by a background task."""
    async with agent.open_run("go") as run, anyio.create_task_group() as tg:

        async def consume() -> None:
            async for event in run.events():
                events.append(event)

        tg.start_soon(consume)
        yield run


async def test_interrupt_cancels_cancel_tools_and_waits_for_block_tools() -> None:
    gate = Gate()
    gate.expected = 2
    cancel_me = gate.tool("cancel_me", interrupt=Interrupt.CANCEL)
    finish_me = gate.tool("finish_me", interrupt=Interrupt.BLOCK)
    later = gate.tool(
        "later", interrupt=Interrupt.BLOCK, concurrency=Concurrency.SEQUENTIAL
    )
    model = scripted(
        use(
            call("c", "cancel_me", tag="c"),
            call("b", "finish_me", tag="b"),
            call("l", "later", tag="l"),
        )
    )
    events: list[Event] = []
    async with consumed(Agent(model, [cancel_me, finish_me, later]), events) as run:
        await gate.all_started.wait()
        run.interrupt()
        await anyio.wait_all_tasks_blocked()
        assert not run.done  # the BLOCK tool is still running
        assert gate.finished == []
        gate.release.set()
    result = run.result
    assert result is not None
    assert result.completion_reason is CompletionReason.INTERRUPTED
    assert sorted(gate.started) == ["b", "c"]  # "later" never started
    assert gate.finished == ["b"]
    c, b, later_result = result.messages[2].tool_results
    assert c.synthetic and c.is_error and "interrupted" in c.text.lower()
    assert b.content == "b done" and not b.is_error
    assert later_result.synthetic and "Not run" in later_result.text
    assert kinds(events)[-1] == "RunFinished"
    assert_provider_valid(result.messages)


async def test_interrupt_during_the_model_stream() -> None:
    model = scripted(ScriptStep(say("never seen"), first_chunk_delay=1_000.0))
    events: list[Event] = []
    async with consumed(Agent(model), events) as run:
        while not any(isinstance(e, ModelCallStarted) for e in events):
            await anyio.lowlevel.checkpoint()
        run.interrupt()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.INTERRUPTED
    assert len(run.result.messages) == 1  # only the prompt: nothing half-recorded
    assert "TextDelta" not in kinds(events)
    assert_provider_valid(run.result.messages)


async def test_sent_messages_are_injected_after_the_batch() -> None:
    gate = Gate()
    gate.expected = 1
    slow = gate.tool("slow", interrupt=Interrupt.BLOCK)
    model = scripted(use(call("s", "slow", tag="s")), say("ok"))
    events: list[Event] = []
    async with consumed(Agent(model, [slow]), events) as run:
        await gate.all_started.wait()
        run.send("also look at README")
        gate.release.set()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.COMPLETED
    second = model.requests[1].messages[-1]
    assert second.role == "user"
    assert [r.call_id for r in second.tool_results] == ["s"]
    assert Text("also look at README") in second.blocks
    assert [e.reason for e in events if isinstance(e, LoopTransition)] == [
        "queued_input"
    ]
    assert_provider_valid(run.result.messages)


async def test_a_message_queued_at_the_final_answer_continues_the_run() -> None:
    events: list[Event] = []
    run_ref: list[AgentRun] = []

    def answer(request: object) -> object:
        run_ref[0].send("one more thing")
        return say("first answer")

    model = scripted(answer, say("second answer"))
    agent = Agent(model, [add])
    async with consumed(agent, events) as run:
        run_ref.append(run)
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.COMPLETED
    assert run.result.output == "second answer"
    assert model.requests[1].messages[-1].text == "one more thing"
    assert_provider_valid(run.result.messages)


async def test_leaving_the_block_early_interrupts_cleanly() -> None:
    gate = Gate()
    gate.expected = 1
    slow = gate.tool("slow", interrupt=Interrupt.CANCEL)
    model = scripted(use(call("s", "slow", tag="s")))
    async with Agent(model, [slow]).open_run("go") as run:
        await gate.all_started.wait()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.INTERRUPTED
    assert_provider_valid(run.result.messages)


async def test_cancelled_from_outside_still_ends_honestly() -> None:
    gate = Gate()
    gate.expected = 1
    slow = gate.tool("slow", interrupt=Interrupt.BLOCK)
    model = scripted(use(call("s", "slow", tag="s")))
    events: list[Event] = []
    with anyio.CancelScope() as scope:
        async with consumed(Agent(model, [slow]), events) as run:
            await gate.all_started.wait()
            scope.cancel()
            await anyio.sleep_forever()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.INTERRUPTED
    assert "cancelled from outside" in run.result.detail
    # The response was recorded before its tool ran; the cut call is answered honestly.
    _, assistant, answer = run.result.messages
    assert [c.id for c in assistant.tool_calls] == ["s"]
    (result,) = answer.tool_results
    assert result.is_error and result.synthetic
    assert "outcome unknown" in result.text and "cancelled" in result.text
    assert_provider_valid(run.result.messages)
