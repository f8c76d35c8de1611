"""The retry gateway over real SDK streams: Retry-After from the wire, restarts, fallback.

Real clocks here (see conftest), so waits are kept to milliseconds and only the
decisions are asserted; the exact schedule is asserted under MockClock in
tests/models/test_models_retry.py.
"""

from __future__ import annotations

import pytest
from models_loopback import JsonReply, LoopbackServer, SseReply, fixture
from models_sdk_cases import ANTHROPIC, OPENAI_CHAT

from toolweave import ModelConnectionError, OverloadedError, RateLimitedError
from toolweave.messages import Message, StopReason
from toolweave.models import (
    ChunkAggregator,
    ModelRequest,
    RetryInfo,
    RetryingModel,
    RetryPolicy,
    StreamChunk,
    StreamRestart,
    TextChunk,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

HELLO = ModelRequest([Message("user", "Say hello")])


async def test_retry_after_from_the_wire_sets_the_wait(server: LoopbackServer) -> None:
    infos: list[RetryInfo] = []
    body = ANTHROPIC.error_body("rate_limit_error", "slow down")
    server.script(
        JsonReply(429, body, {"retry-after-ms": "20"}), fixture("anthropic", "text")
    )
    async with ANTHROPIC.open(server) as primary:
        model = RetryingModel(primary, on_retry=infos.append)
        response = await model.complete(HELLO)
    assert response.text == "Hello, world!"
    (info,) = infos
    assert isinstance(info.error, RateLimitedError)
    assert info.delay == pytest.approx(0.02)
    assert (info.model, info.next_model, info.fallback) == (
        "claude-sonnet-4-6",
    ) * 2 + (False,)
    assert len(server.requests) == 2


async def test_a_huge_retry_after_is_clamped(server: LoopbackServer) -> None:
    infos: list[RetryInfo] = []
    body = ANTHROPIC.error_body("overloaded_error", "Overloaded")
    server.script(
        JsonReply(529, body, {"retry-after": "86400"}), fixture("anthropic", "text")
    )
    async with ANTHROPIC.open(server) as primary:
        model = RetryingModel(
            primary, policy=RetryPolicy(max_retry_after=0.01), on_retry=infos.append
        )
        await model.complete(HELLO)
    assert [i.delay for i in infos] == [0.01]
    assert isinstance(infos[0].error, OverloadedError)


async def test_a_stream_cut_mid_way_restarts_cleanly(server: LoopbackServer) -> None:
    log: list[str] = []
    text = fixture("openai_chat", "text")
    server.script(SseReply(text.raw, cut_after_events=3), text)
    async with OPENAI_CHAT.open(server) as primary:
        model = RetryingModel(
            primary,
            policy=RetryPolicy(initial_delay=0.001, jitter=0.0),
            on_retry=lambda info: log.append(f"on_retry {info.discarded_chunks}"),
        )
        chunks: list[StreamChunk] = []
        async for chunk in model.stream(HELLO):
            chunks.append(chunk)
            log.append(type(chunk).__name__)
    restart_at = next(i for i, c in enumerate(chunks) if isinstance(c, StreamRestart))
    assert chunks[:restart_at] == [
        TextChunk("Hello", block=0),
        TextChunk(", wor", block=0),
    ]
    assert log[:4] == ["TextChunk", "TextChunk", "on_retry 2", "StreamRestart"]
    aggregator = ChunkAggregator()
    for chunk in chunks:
        aggregator.add(chunk)
    assert aggregator.response().text == "Hello, world!"  # nothing of the dead attempt
    restart = chunks[restart_at]
    assert isinstance(restart, StreamRestart)
    assert "Connection" in restart.error or "connection" in restart.error


async def test_overload_falls_back_to_another_provider(server: LoopbackServer) -> None:
    infos: list[RetryInfo] = []
    server.script(
        JsonReply(529, ANTHROPIC.error_body("overloaded_error", "Overloaded")),
        fixture("openai_chat", "text"),
    )
    async with ANTHROPIC.open(server) as primary, OPENAI_CHAT.open(server) as fallback:
        model = RetryingModel(primary, fallbacks=[fallback], on_retry=infos.append)
        response = await model.complete(HELLO)
    assert response.model == "gpt-4.1-2025-04-14"
    assert response.stop_reason is StopReason.END_TURN
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/chat/completions"]
    assert [(i.fallback, i.delay, i.next_model) for i in infos] == [
        (True, 0.0, "gpt-4.1")
    ]


async def test_connection_failures_exhaust_the_budget_then_raise(
    server: LoopbackServer,
) -> None:
    text = fixture("anthropic", "text")
    cut = SseReply(text.raw, cut_after_events=1)
    server.script(cut, cut)
    async with ANTHROPIC.open(server) as primary:
        model = RetryingModel(
            primary, policy=RetryPolicy(max_attempts=2, initial_delay=0.001)
        )
        with pytest.raises(ModelConnectionError):
            await model.complete(HELLO)
    assert len(server.requests) == 2
