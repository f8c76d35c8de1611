"""Compaction: auto (with its circuit breaker), prompt-too-long recovery, and the pure helpers."""

from __future__ import annotations

from typing import Any

import pytest
from loop_support import (
    add,
    assert_provider_valid,
    call,
    config,
    finished,
    kinds,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave._exceptions import AuthenticationError, PromptTooLongError
from toolweave.events import CompactBoundary, CompletionReason, LoopTransition, Warning
from toolweave.loop import (
    Agent,
    Compacted,
    Compactor,
    drop_oldest_rounds,
    transcript_problems,
)
from toolweave.messages import Message, Text, ToolResult, Usage

pytestmark = pytest.mark.anyio

SMALL = Usage(10, 5)
BIG = Usage(600, 5)


def rounds(n: int, usage: Usage = SMALL) -> list[Any]:
    return [
        use(call(f"c{i}", "add", a=i, b=1), text=f"step {i}", usage=usage)
        for i in range(n)
    ]


def history(n_rounds: int) -> list[Message]:
    messages = [Message("user", "start")]
    for i in range(n_rounds):
        c = call(f"h{i}", "add", a=i, b=i)
        messages += [
            Message("assistant", (Text(f"turn {i}"), c)),
            Message("user", (ToolResult(c.id, str(2 * i)),)),
        ]
    return messages


async def test_auto_compaction_at_the_threshold() -> None:
    model = scripted(
        *rounds(2),
        use(call("big", "add", a=1, b=1), usage=BIG),
        say("SUMMARY: added numbers"),
        say("done"),
        context_window=1_000,
    )
    agent = Agent(
        model, [add], config=config(compaction_threshold=0.5, compaction_keep_recent=2)
    )
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    summary_request = model.requests[3]
    assert summary_request.tools == ()
    assert "step 0" in summary_request.messages[0].text
    after = model.requests[4].messages
    assert after[0].text.endswith("SUMMARY: added numbers")
    assert [r.call_id for r in after[2].tool_results] == [
        "big"
    ]  # the tail's pair is intact
    names = kinds(events)
    at = names.index("CompactBoundary")
    assert names[at - 1 : at + 2] == [
        "LoopTransition",
        "CompactBoundary",
        "IterationStarted",
    ]
    boundary = next(e for e in events if isinstance(e, CompactBoundary))
    assert (boundary.messages_before, boundary.messages_after, boundary.reason) == (
        7,
        3,
        "auto",
    )
    transition = next(
        e
        for e in events
        if isinstance(e, LoopTransition) and e.reason == "budget_compact"
    )
    assert transition.detail == "next_iteration"
    assert_provider_valid(result.messages)
    model.assert_complete()


async def test_a_hard_stop_wins_over_compaction() -> None:
    model = scripted(
        *rounds(2), use(call("big", "add", a=1, b=1), usage=BIG), context_window=1_000
    )
    cfg = config(
        compaction_threshold=0.5, compaction_keep_recent=2, max_total_tokens=600
    )
    result, events = await run_collect(Agent(model, [add], config=cfg))
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    assert not any(isinstance(e, CompactBoundary) for e in events)
    model.assert_complete()  # no summary call was made


async def test_compaction_circuit_breaker() -> None:
    summariser = scripted(say(""), AuthenticationError("no"), name="summariser")
    model = scripted(*rounds(3), *rounds(3, BIG), say("done"), context_window=1_000)
    cfg = config(
        compaction_threshold=0.5,
        compaction_keep_recent=2,
        compaction_model=summariser,
        compaction_max_failures=2,
    )
    result, events = await run_collect(Agent(model, [add], config=cfg))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert len(summariser.requests) == 2  # then the breaker stays open
    warnings = [e.message for e in events if isinstance(e, Warning)]
    assert any("empty summary" in w for w in warnings)
    assert any("auto-compaction is off for this run after 2" in w for w in warnings)
    assert_provider_valid(result.messages)


async def test_prompt_too_long_compacts_then_retries_once() -> None:
    model = scripted(PromptTooLongError("too long"), say("SUMMARY"), say("answer"))
    agent = Agent(model, [add], config=config(compaction_keep_recent=2))
    events = [e async for e in agent.run_stream("go on", history=history(3))]
    assert finished(events).reason is CompletionReason.COMPLETED
    boundary = next(e for e in events if isinstance(e, CompactBoundary))
    assert boundary.reason == "prompt_too_long"
    assert (
        boundary.messages_before == 8 and boundary.messages_after == 4
    )  # summary + a2, u2, prompt
    transitions = [e for e in events if isinstance(e, LoopTransition)]
    assert [t.reason for t in transitions] == ["prompt_too_long_retry"]
    assert "summarised" in transitions[0].detail
    assert model.requests[2].messages[0].text.endswith("SUMMARY")
    model.assert_complete()


async def test_prompt_too_long_drops_old_rounds_when_compaction_fails() -> None:
    summariser = scripted(AuthenticationError("summaries are off"), name="summariser")
    model = scripted(PromptTooLongError("too long"), say("answer"))
    agent = Agent(model, [add], config=config(compaction_model=summariser))
    events = [e async for e in agent.run_stream("go on", history=history(4))]
    assert finished(events).reason is CompletionReason.COMPLETED
    retried = model.requests[1].messages
    assert len(retried) < len(model.requests[0].messages)
    assert "older messages were dropped" in retried[0].text
    assert not transcript_problems(retried)
    transition = next(e for e in events if isinstance(e, LoopTransition))
    assert "dropped the oldest messages" in transition.detail


async def test_prompt_too_long_twice_ends_as_context_window_exceeded() -> None:
    model = scripted(
        PromptTooLongError("too long"), say("SUMMARY"), PromptTooLongError("still")
    )
    agent = Agent(model, [add], config=config(compaction_keep_recent=2))
    events = [e async for e in agent.run_stream("go on", history=history(3))]
    done = finished(events)
    assert done.reason is CompletionReason.CONTEXT_WINDOW_EXCEEDED
    assert "even after shrinking" in done.detail and "still" in done.detail


def test_drop_oldest_rounds_keeps_pairs_and_the_first_message() -> None:
    messages = history(4)
    outcome = drop_oldest_rounds(messages, target_tokens=None)
    assert isinstance(outcome, Compacted)
    assert outcome.before == 9 and outcome.after == 5
    assert outcome.messages[0].blocks[0] == Text("start")
    assert not transcript_problems(outcome.messages)
    assert drop_oldest_rounds(history(1), target_tokens=None) == "no droppable messages"
    fits = drop_oldest_rounds(messages, target_tokens=0)
    assert isinstance(fits, Compacted) and fits.after == 3  # all but the latest round


async def test_compactor_refuses_when_nothing_is_old_enough() -> None:
    compactor = Compactor(scripted(), keep_recent=6)
    assert "nothing old enough" in str(await compactor.compact(history(2)))
