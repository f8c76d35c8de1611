"""The Agent surface: construction, config checks, transcript rules, honest internal failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
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

from toolweave._exceptions import ConfigError, InternalError, UsageError
from toolweave.events import CompletionReason
from toolweave.loop import Agent, AgentConfig, transcript_problems, validate_transcript
from toolweave.messages import Message, ModelResponse, ToolCall, ToolResult
from toolweave.models import (
    AnthropicModel,
    Model,
    ModelRequest,
    OpenAIChatModel,
    StreamChunk,
)


def test_model_strings_resolve_through_the_models_layer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert isinstance(Agent("anthropic:claude-sonnet-4-5").model, AnthropicModel)
    assert isinstance(Agent("openai:gpt-4o").model, OpenAIChatModel)
    with pytest.raises(ConfigError):
        Agent("nobody:model")


@pytest.mark.parametrize(
    "bad",
    [
        {"max_iterations": 0},
        {"max_cost_usd": 0},
        {"max_wall_clock": -1.0},
        {"max_total_tokens": 0},
        {"compaction_threshold": 1.5},
        {"stall_limit": 0},
        {"repeat_failure_limit": 0},
        {"compaction_keep_recent": 1},
    ],
)
def test_config_rejects_nonsense(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        AgentConfig(**bad)


def test_run_sync() -> None:
    result = Agent(scripted(say("hi there"))).run_sync("hello")
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.output == "hi there" and result.iterations == 1 and result.ok


def test_transcript_rules() -> None:
    c1, c2 = ToolCall("1", "t", {}), ToolCall("2", "t", {})
    ok = [
        Message("user", "q"),
        Message("assistant", (c1, c2)),
        Message("user", (ToolResult("1", "a"), ToolResult("2", "b"))),
    ]
    assert transcript_problems(ok) == []
    swapped = [*ok[:2], Message("user", (ToolResult("2", "b"), ToolResult("1", "a")))]
    assert "one for one, in order" in transcript_problems(swapped)[0]
    assert "never answered" in transcript_problems(ok[:2])[0]
    dup = [
        Message("user", "q"),
        Message("assistant", (c1, c1)),
        Message("user", (ToolResult("1", "a"), ToolResult("1", "a"))),
    ]
    # Models repeat ids; a result answers the call at its position, so this is valid.
    assert transcript_problems(dup) == []
    wrong_id = [*dup[:2], Message("user", (ToolResult("1", "a"), ToolResult("2", "b")))]
    assert "one for one, in order" in transcript_problems(wrong_id)[0]
    orphan = [Message("user", (ToolResult("9", "x"),))]
    assert any("without preceding calls" in p for p in transcript_problems(orphan))
    assert any(
        "start with a user" in p
        for p in transcript_problems([Message("assistant", "hi")])
    )
    with pytest.raises(InternalError):
        validate_transcript(swapped)


@pytest.mark.anyio
async def test_history_must_be_valid_and_events_iterate_once() -> None:
    agent = Agent(scripted(say("ok")))
    with pytest.raises(UsageError):
        async with agent.open_run(
            "x", history=[Message("assistant", (ToolCall("1", "t", {}),))]
        ):
            pass
    async with agent.open_run("x") as run:
        async for _ in run.events():
            pass
        with pytest.raises(UsageError):
            async for _ in run.events():
                pass


@pytest.mark.anyio
async def test_resumed_history_is_continued() -> None:
    first = Agent(scripted(use(call("a", "add", a=1, b=1)), say("2")), [add])
    done = await first.run("one plus one")
    model = scripted(say("and 4"))
    again = await Agent(model, [add]).run("double it", history=done.messages)
    assert again.completion_reason is CompletionReason.COMPLETED
    assert list(model.requests[0].messages[:4]) == list(done.messages)
    assert_provider_valid(again.messages)


@pytest.mark.anyio
async def test_an_internal_failure_ends_as_error_not_as_a_crash() -> None:
    def explode(request: ModelRequest) -> ModelResponse:
        raise RuntimeError("bug in a model adapter")

    result, _events = await run_collect(Agent(scripted(explode)))
    assert result.completion_reason is CompletionReason.ERROR
    assert "RuntimeError: bug in a model adapter" in result.detail
    assert_provider_valid(result.messages)


@pytest.mark.anyio
async def test_an_empty_final_response_leaves_no_empty_message() -> None:
    result, _ = await run_collect(Agent(scripted(ModelResponse([]))))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.output == ""
    assert [m.role for m in result.messages] == ["user"]


@pytest.mark.anyio
async def test_concurrent_runs_of_one_agent_are_independent() -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        return say(f"echo {request.messages[-1].text}")

    agent = Agent(scripted(answer, answer, answer), config=config())
    outputs: dict[str, str] = {}

    async def one(prompt: str) -> None:
        outputs[prompt] = (await agent.run(prompt)).output

    async with anyio.create_task_group() as tg:
        for prompt in ("a", "b", "c"):
            tg.start_soon(one, prompt)
    assert outputs == {"a": "echo a", "b": "echo b", "c": "echo c"}


class Closing(Model):
    """A model that only records being closed."""

    def __init__(self, closed: list[str]) -> None:
        self._closed = closed

    @property
    def name(self) -> str:
        return "closing"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        nothing: tuple[StreamChunk, ...] = ()
        for chunk in nothing:  # makes this an async generator
            yield chunk
        raise AssertionError("not called")

    async def aclose(self) -> None:
        self._closed.append(self.name)


@pytest.mark.anyio
async def test_aclose_closes_only_models_the_agent_created(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    closed: list[str] = []
    passed_in = Closing(closed)
    agent = Agent(
        "anthropic:claude-sonnet-4-5", config=config(fallback_models=[passed_in])
    )
    assert isinstance(agent.model, AnthropicModel)
    client = agent.model._sdk()  # the HTTP client is made on first use
    await agent.aclose()
    await agent.aclose()  # idempotent
    assert client.is_closed()
    assert closed == []  # the caller passed it in: the caller closes it
