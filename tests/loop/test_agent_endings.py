"""Every way a run can end, each with its events and a transcript the provider accepts."""

from __future__ import annotations

import anyio
import pytest
from loop_support import (
    Gate,
    add,
    assert_provider_valid,
    call,
    config,
    fail,
    kinds,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave._exceptions import AuthenticationError
from toolweave.events import (
    CompletionReason,
    IterationStarted,
    LoopTransition,
    ModelCallFinished,
    ReasoningDelta,
    RunStarted,
    ToolResultReady,
    ToolRunning,
    ToolUseStarted,
)
from toolweave.execution import Hooks, PostToolUseDecision, PostToolUseInput, StopInput
from toolweave.loop import TRUNCATION_MARKER, Agent
from toolweave.messages import ModelResponse, StopReason, Thinking, ToolResult, Usage
from toolweave.tools import Interrupt, tool

pytestmark = pytest.mark.anyio


async def test_completed_runs_tools_then_answers() -> None:
    model = scripted(
        use(call("a", "add", a=1, b=2), call("b", "add", a=3, b=4), text="adding"),
        say("3 and 7"),
    )
    result, events = await run_collect(Agent(model, [add]))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.output == "3 and 7"
    assert isinstance(events[0], RunStarted)
    started = [e.call.id for e in events if isinstance(e, ToolUseStarted)]
    ready = {
        e.result.call_id: e.result.content
        for e in events
        if isinstance(e, ToolResultReady)
    }
    assert started == ["a", "b"]
    assert ready == {"a": "3", "b": "7"}
    transitions = [e.reason for e in events if isinstance(e, LoopTransition)]
    assert transitions == ["next_iteration"]
    assert [e.iteration for e in events if isinstance(e, IterationStarted)] == [1, 2]
    # a tool event never precedes its iteration's ModelCallStarted
    assert kinds(events).index("ToolUseStarted") > kinds(events).index(
        "ModelCallStarted"
    )
    assert_provider_valid(result.messages)
    assert [r.call_id for r in result.messages[2].tool_results] == ["a", "b"]
    assert result.usage == Usage(20, 10, requests=0)
    model.assert_complete()


async def test_truncated_final_answer_is_marked() -> None:
    model = scripted(say("The answer is forty", stop=StopReason.MAX_TOKENS))
    result, events = await run_collect(Agent(model))
    assert result.completion_reason is CompletionReason.TRUNCATED
    assert result.output == f"The answer is forty\n\n{TRUNCATION_MARKER}"
    assert "max_tokens" in result.detail
    assert kinds(events)[-4:] == [
        "ModelCallFinished",
        "Warning",  # unpriced model
        "MessageAppended",  # the cut answer, as the transcript keeps it
        "RunFinished",
    ]
    assert_provider_valid(result.messages)
    assert (
        result.messages[-1].text == "The answer is forty"
    )  # the transcript stays faithful


async def test_truncated_tool_calls_are_refused_not_run() -> None:
    ran: list[int] = []

    @tool
    async def write(size: int) -> str:
        """Pretend to write."""
        ran.append(size)
        return "ok"

    model = scripted(
        use(
            call("w1", "write", size=1),
            call("w2", "write", size=2),
            stop=StopReason.MAX_TOKENS,
        ),
        say("done"),
    )
    result, events = await run_collect(Agent(model, [write]))
    assert ran == []
    assert result.completion_reason is CompletionReason.COMPLETED
    refused = result.messages[2].tool_results
    assert [r.call_id for r in refused] == ["w1", "w2"]
    assert all(r.is_error and "max_tokens" in r.text for r in refused)
    assert [e.reason for e in events if isinstance(e, LoopTransition)] == [
        "max_tokens_refused"
    ]
    assert_provider_valid(result.messages)


async def test_max_iterations_is_a_normal_return_with_stop_hooks() -> None:
    seen: list[StopInput] = []
    hooks = Hooks()
    hooks.stop(seen.append)
    model = scripted(
        *[use(call(f"c{i}", "add", a=i, b=i), text=f"step {i}") for i in range(2)]
    )
    agent = Agent(model, [add], config=config(max_iterations=2, hooks=hooks))
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.MAX_ITERATIONS
    assert "max_iterations=2" in result.detail
    assert result.output == "step 1"
    assert [s.output for s in seen] == ["step 1"]
    assert sum(isinstance(e, IterationStarted) for e in events) == 2
    assert_provider_valid(result.messages)
    model.assert_complete()


async def test_token_budget_stops_before_the_next_call() -> None:
    model = scripted(*[use(call(f"c{i}", "add", a=1, b=1)) for i in range(2)])
    agent = Agent(model, [add], config=config(max_total_tokens=25))
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    assert "token budget spent: 30 of 25" in result.detail
    assert sum(isinstance(e, ModelCallFinished) for e in events) == 2
    assert_provider_valid(result.messages)
    model.assert_complete()


async def test_wall_clock_budget_cuts_a_running_batch(
    anyio_backend: object,
) -> None:
    gate = Gate()
    slow = gate.tool("slow", interrupt=Interrupt.CANCEL)
    model = scripted(use(call("s", "slow", tag="s")))
    virtual = isinstance(anyio_backend, tuple)  # trio's MockClock: 30 s cost nothing
    budget = 30.0 if virtual else 0.05
    agent = Agent(model, [slow], config=config(max_wall_clock=budget))
    start = anyio.current_time()
    result, _events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    assert "wall-clock" in result.detail
    [answer] = result.messages[2].tool_results
    # cut as at a timeout: it ran, so not synthetic; its effects are unknown
    assert answer.is_error and answer.text.startswith("Timed out")
    assert "effects it had are unknown" in answer.text
    assert gate.finished == []
    if virtual:  # exact under MockClock
        assert anyio.current_time() - start == pytest.approx(30.0)
    assert_provider_valid(result.messages)


async def test_cost_budget() -> None:
    million = Usage(1_000_000, 0)
    model = scripted(
        *[use(call(f"c{i}", "add", a=1, b=1), usage=million) for i in range(2)],
        name="claude-sonnet-4-5",
    )
    agent = Agent(model, [add], config=config(max_cost_usd=5.0))
    result, _events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COST_BUDGET_EXCEEDED
    assert result.cost == pytest.approx(6.0)  # $3 per million input tokens, twice
    assert "$6.0000 of $5.0000" in result.detail
    assert_provider_valid(result.messages)


async def test_stalled_iterations_end_as_error() -> None:
    model = scripted(*[use(call(f"f{i}", "fail", why=f"no {i}")) for i in range(3)])
    result, _events = await run_collect(Agent(model, [fail]))
    assert result.completion_reason is CompletionReason.ERROR
    assert "3 consecutive iterations" in result.detail
    assert "keeps calling tools that fail" in result.detail
    assert_provider_valid(result.messages)
    model.assert_complete()


async def test_stalled_truncations_say_so() -> None:
    model = scripted(
        *[
            use(call(f"w{i}", "add", a=1, b=1), stop=StopReason.MAX_TOKENS)
            for i in range(3)
        ]
    )
    result, _ = await run_collect(Agent(model, [add]))
    assert result.completion_reason is CompletionReason.ERROR
    assert "truncated at max_tokens" in result.detail
    assert_provider_valid(result.messages)


async def test_a_success_resets_the_stall_count() -> None:
    model = scripted(
        use(call("f1", "fail", why="x")),
        use(call("f2", "fail", why="y")),
        use(call("ok", "add", a=1, b=1)),
        use(call("f3", "fail", why="z")),
        use(call("f4", "fail", why="w")),
        say("gave up"),
    )
    result, _ = await run_collect(Agent(model, [add, fail]))
    assert result.completion_reason is CompletionReason.COMPLETED


async def test_model_error_ends_as_error() -> None:
    model = scripted(use(call("a", "add", a=1, b=1)), AuthenticationError("bad key"))
    result, _events = await run_collect(Agent(model, [add]))
    assert result.completion_reason is CompletionReason.ERROR
    assert "AuthenticationError: bad key" in result.detail
    assert_provider_valid(result.messages)


async def test_interrupted_mid_batch() -> None:
    gate = Gate()
    gate.expected = 1
    slow = gate.tool("slow", interrupt=Interrupt.CANCEL)
    model = scripted(use(call("s", "slow", tag="s"), call("t", "add", a=1, b=1)))
    agent = Agent(model, [slow, add])
    async with agent.open_run("go") as run:
        events = []
        async with anyio.create_task_group() as tg:

            async def consume() -> None:
                async for event in run.events():
                    events.append(event)

            tg.start_soon(consume)
            await gate.all_started.wait()
            run.interrupt()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.INTERRUPTED
    assert kinds(events)[-1] == "RunFinished"
    results = run.result.messages[2].tool_results
    assert [r.call_id for r in results] == ["s", "t"]
    assert results[0].synthetic and results[0].is_error
    assert_provider_valid(run.result.messages)


async def test_hook_stopped_after_the_batch() -> None:
    hooks = Hooks()

    @hooks.post_tool_use("add")
    def stop_after(data: PostToolUseInput) -> PostToolUseDecision:
        return PostToolUseDecision(
            prevent_continuation=True, stop_reason="enough adding"
        )

    model = scripted(use(call("a", "add", a=2, b=2)))
    result, events = await run_collect(Agent(model, [add], config=config(hooks=hooks)))
    assert result.completion_reason is CompletionReason.HOOK_STOPPED
    assert "enough adding" in result.detail
    [answer] = result.messages[2].tool_results
    assert answer == ToolResult("a", "4")
    assert "ToolResultReady" in kinds(events)
    assert_provider_valid(result.messages)
    model.assert_complete()


async def test_reasoning_streams_and_is_kept_verbatim() -> None:
    thinking = Thinking("let me think", "sig-123")
    model = scripted(
        ModelResponse(
            [thinking, call("a", "add", a=1, b=1)], StopReason.TOOL_USE, Usage(1, 1)
        ),
        say("2"),
    )
    result, events = await run_collect(Agent(model, [add]))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert [e.text for e in events if isinstance(e, ReasoningDelta)] == ["let me think"]
    assert [e.call_id for e in events if isinstance(e, ToolRunning)] == ["a"]
    assert result.messages[1].blocks[0] == thinking  # signature echoed back unchanged
    assert model.requests[1].messages[1].blocks[0] == thinking
    assert_provider_valid(result.messages)
