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
from toolweave.loop import Agent
from toolweave.messages import Usage
from toolweave.models import RetryPolicy, ScriptStep
from toolweave.tools import Access, Concurrency, tool

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
