"""Stop hooks (seed 003 §4.7), hook context, and tools that stop the run."""

from __future__ import annotations

import pytest
from loop_support import (
    add,
    assert_provider_valid,
    call,
    config,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave._exceptions import StopRun
from toolweave.events import CompletionReason, LoopTransition, Warning
from toolweave.execution import (
    Hooks,
    PreToolUseDecision,
    PreToolUseInput,
    StopDecision,
    StopInput,
)
from toolweave.loop import Agent
from toolweave.messages import Text
from toolweave.tools import tool

pytestmark = pytest.mark.anyio


async def test_a_stop_hook_can_send_the_model_back_to_work() -> None:
    seen: list[StopInput] = []
    hooks = Hooks()

    @hooks.stop
    def demand_tests(data: StopInput) -> StopDecision | None:
        seen.append(data)
        return (
            None
            if data.stop_hook_active
            else StopDecision(reason="run the tests first")
        )

    model = scripted(say("done"), use(call("t", "add", a=1, b=1)), say("tests pass"))
    result, events = await run_collect(Agent(model, [add], config=config(hooks=hooks)))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.output == "tests pass"
    assert [s.stop_hook_active for s in seen] == [False, True]
    assert "run the tests first" in model.requests[1].messages[-1].text
    reasons = [e.reason for e in events if isinstance(e, LoopTransition)]
    assert reasons == ["stop_hook_blocked", "next_iteration"]
    assert_provider_valid(result.messages)


async def test_hook_context_reaches_the_model_with_the_results() -> None:
    hooks = Hooks()

    @hooks.pre_tool_use("add")
    def remind(data: PreToolUseInput) -> PreToolUseDecision:
        return PreToolUseDecision(additional_context="numbers are in base 10")

    model = scripted(use(call("a", "add", a=1, b=1)), say("2"))
    result, _ = await run_collect(Agent(model, [add], config=config(hooks=hooks)))
    assert result.completion_reason is CompletionReason.COMPLETED
    reply = model.requests[1].messages[-1]
    assert [r.call_id for r in reply.tool_results] == ["a"]
    assert (
        Text("<system-reminder>\nnumbers are in base 10\n</system-reminder>")
        in reply.blocks
    )
    assert_provider_valid(result.messages)


async def test_a_tool_raising_stop_run_ends_the_run_after_its_batch() -> None:
    @tool
    async def halt() -> str:
        """Stops the run."""
        raise StopRun("the user's quota is used up")

    model = scripted(use(call("h", "halt"), call("a", "add", a=1, b=1)))
    result, _ = await run_collect(Agent(model, [halt, add]))
    assert result.completion_reason is CompletionReason.HOOK_STOPPED
    assert "quota" in result.detail
    assert [r.call_id for r in result.messages[2].tool_results] == ["h", "a"]
    assert_provider_valid(result.messages)


async def test_stop_hooks_hear_of_budget_stops_but_cannot_extend_them() -> None:
    hooks = Hooks()
    heard: list[str] = []

    @hooks.stop
    def insist(data: StopInput) -> StopDecision:
        heard.append(data.output)
        return StopDecision(reason="keep going")

    model = scripted(use(call("a", "add", a=1, b=1), text="working"))
    agent = Agent(model, [add], config=config(hooks=hooks, max_total_tokens=10))
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    assert heard == ["working"]
    assert any(isinstance(e, Warning) and "keep going" in e.message for e in events)
