"""A RunStart hook adds context to a run's first message (issue 13 item 11c)."""

from __future__ import annotations

import pytest
from loop_support import say

import toolweave as tw
from toolweave.events import Warning as WarningEvent
from toolweave.execution import Hooks, RunStartDecision, RunStartInput
from toolweave.models import ModelRequest, ScriptedModel

pytestmark = pytest.mark.anyio


def _capture(into: list[tw.Message]) -> ScriptedModel:
    def answer(request: ModelRequest) -> tw.ModelResponse:
        into.extend(request.messages)
        return say("ok")

    return ScriptedModel([answer])


async def test_the_context_reaches_the_model_before_the_prompt() -> None:
    hooks = Hooks()
    seen: list[RunStartInput] = []

    @hooks.run_start
    async def branch(data: RunStartInput) -> RunStartDecision:
        seen.append(data)
        return RunStartDecision(additional_context="You are on branch main.")

    messages: list[tw.Message] = []
    agent = tw.Agent(_capture(messages), config=tw.AgentConfig(hooks=hooks))
    result = await agent.run("fix it")
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    (first,) = messages
    assert [b.text for b in first.blocks if isinstance(b, tw.Text)] == [
        "<system-reminder>\nYou are on branch main.\n</system-reminder>",
        "fix it",
    ]
    (data,) = seen
    assert (data.prompt, data.resumed) == ("fix it", False)
    assert result.messages[0] == first  # the transcript keeps what the model saw


async def test_a_resumed_run_says_so_and_only_its_new_message_gets_the_context() -> (
    None
):
    hooks = Hooks()
    seen: list[RunStartInput] = []
    hooks.run_start(
        lambda data: seen.append(data) or RunStartDecision(additional_context="ctx")
    )
    history = [tw.Message("user", "earlier"), tw.Message("assistant", [tw.Text("hi")])]
    messages: list[tw.Message] = []
    agent = tw.Agent(_capture(messages), config=tw.AgentConfig(hooks=hooks))
    await agent.run("again", history=history)
    assert seen[0].resumed is True
    assert messages[:2] == history
    assert messages[2].blocks[0] == tw.Text(
        "<system-reminder>\nctx\n</system-reminder>"
    )


async def test_a_failing_hook_is_a_warning_and_the_run_goes_on() -> None:
    hooks = Hooks()

    @hooks.run_start
    def broken(data: RunStartInput) -> RunStartDecision:
        raise RuntimeError("no git")

    messages: list[tw.Message] = []
    agent = tw.Agent(_capture(messages), config=tw.AgentConfig(hooks=hooks))
    events = [e async for e in agent.run_stream("go")]
    warnings = [
        e.message
        for e in events
        if isinstance(e, WarningEvent) and e.message.startswith("RunStart")
    ]
    assert warnings == ["RunStart hook broken raised RuntimeError('no git'); ignored"]
    assert events[-1].reason is tw.CompletionReason.COMPLETED  # type: ignore[attr-defined]
    assert messages[0] == tw.Message("user", "go")  # nothing added
