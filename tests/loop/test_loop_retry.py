"""Retries and fallback through the gateway: dead attempts leave nothing in the transcript."""

from __future__ import annotations

import pytest
from loop_support import (
    assert_provider_valid,
    call,
    config,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave._exceptions import OverloadedError
from toolweave.events import CompletionReason, Retry, ToolUseStarted
from toolweave.events import Warning as WarningEvent
from toolweave.execution import Hooks, StopDecision, StopInput
from toolweave.loop import Agent
from toolweave.messages import ModelResponse, Text, Usage
from toolweave.models import RetryPolicy, ScriptedModel, ScriptStep
from toolweave.tools import Access, Concurrency, Tool, tool

pytestmark = pytest.mark.anyio

NO_WAIT = RetryPolicy(initial_delay=0.0, jitter=0.0)


async def test_a_stream_that_dies_is_retried_and_its_eager_calls_discarded() -> None:
    seen: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def look(what: str) -> str:
        """A read."""
        seen.append(what)
        return f"saw {what}"

    model = scripted(
        ScriptStep(
            use(
                call("dead", "look", what="first"), call("dead2", "look", what="second")
            ),
            fail_after_chunks=1,
            error=OverloadedError("overloaded mid-stream"),
        ),
        use(call("live", "look", what="again")),
        say("done"),
    )
    result, events = await run_collect(
        Agent(model, [look], config=config(retry=NO_WAIT))
    )
    assert result.completion_reason is CompletionReason.COMPLETED
    retries = [e for e in events if isinstance(e, Retry)]
    assert len(retries) == 1 and "overloaded mid-stream" in retries[0].error
    names = [type(e).__name__ for e in events]
    assert names.index("Retry") < names.index("ModelCallFinished")
    [answer] = result.messages[2].tool_results
    assert answer.call_id == "live" and answer.content == "saw again"
    assert "dead" not in repr(result.messages)
    assert "second" not in seen  # the dead attempt's second call never arrived
    started = [e.call.id for e in events if isinstance(e, ToolUseStarted)]
    assert started[-1] == "live"
    assert_provider_valid(result.messages)


async def test_fallback_model_is_used_and_costed() -> None:
    primary = scripted(OverloadedError("busy"), name="claude-sonnet-4-5")
    fallback = scripted(
        say("from the fallback", usage=Usage(1_000_000, 0)), name="gpt-4o"
    )
    agent = Agent(primary, config=config(retry=NO_WAIT, fallback_models=[fallback]))
    result = await agent.run("hi")
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.output == "from the fallback"
    assert set(result.model_usage) == {"gpt-4o"}
    assert result.model_usage["gpt-4o"].cost == pytest.approx(2.5)
    assert result.cost == pytest.approx(2.5)


def _dying_then(*rest: ModelResponse) -> tuple[list[str], Tool, ScriptedModel]:
    """A model whose first stream runs `look` early, then dies; then `rest`."""
    seen: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def look(what: str) -> str:
        """A read."""
        seen.append(what)
        return f"saw {what}"

    dying = ScriptStep(
        ModelResponse([call("dead", "look", what="early"), Text("x" * 40)]),
        chunk_delay=0.01,
        text_chunk_chars=1,
        fail_after_chunks=30,  # 29 waits: ample for the early start
        error=OverloadedError("overloaded mid-stream"),
    )
    return seen, look, scripted(dying, *rest)


@pytest.mark.parametrize("next_message", ["tool results", "stop hook", "none"])
async def test_a_dead_attempts_call_that_ran_is_told_in_the_next_user_message(
    next_message: str,
) -> None:
    hooks = Hooks()
    asked: list[bool] = []

    @hooks.stop
    def once_more(data: StopInput) -> StopDecision | None:
        asked.append(data.stop_hook_active)
        return None if data.stop_hook_active else StopDecision(reason="go on")

    live = (
        use(call("live", "look", what="again"))
        if next_message == "tool results"
        else say("done")
    )
    seen, look, model = _dying_then(live, say("done"))
    cfg = config(retry=NO_WAIT, hooks=hooks if next_message == "stop hook" else None)
    result, events = await run_collect(Agent(model, [look], config=cfg))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert seen[0] == "early"  # it ran, from the attempt that died
    assert "dead" not in [c.id for m in result.messages for c in m.tool_calls]
    told = [
        b.text
        for m in result.messages
        if m.role == "user"
        for b in m.blocks
        if isinstance(b, Text) and "discarded" in b.text
    ]
    warned = [e.message for e in events if isinstance(e, WarningEvent)]
    if next_message == "none":
        assert told == []
        assert any("saw early" in w and "ended before" in w for w in warned)
    else:
        assert len(told) == 1 and "look" in told[0] and "saw early" in told[0]
        assert not any("ended before" in w for w in warned)
    assert_provider_valid(result.messages)
