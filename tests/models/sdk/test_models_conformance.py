"""One conformance suite, three providers, each through its official SDK on the wire.

Every test runs the same scenario against Anthropic Messages, OpenAI Chat
Completions and OpenAI Responses, served by the loopback server from
recorded-shape SSE fixtures, and asserts the same neutral outcome.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from models_loopback import LoopbackServer, SseReply, fixture
from models_sdk_cases import CASE_IDS, CASES, Case

from toolweave import ModelConnectionError
from toolweave.messages import Message, StopReason, Text, ToolCall, Usage
from toolweave.models import (
    ChunkAggregator,
    Model,
    ModelRequest,
    ReasoningChunk,
    StreamChunk,
    StreamEnd,
    TextChunk,
    ToolDefinition,
    ToolUseReady,
)

pytestmark = [
    pytest.mark.anyio,
    # Under trio, the SDKs' own nested async generators (openai, httpx2, httpcore2)
    # are dropped unexhausted after `[DONE]` or a cut; trio's finalizer warns.
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

TOOLS = (
    ToolDefinition("read", "Read a file", {"type": "object", "properties": {}}),
    ToolDefinition("grep", "Search", {"type": "object", "properties": {}}),
    ToolDefinition("glob", "Find files", {"type": "object", "properties": {}}),
)
HELLO = ModelRequest([Message("user", "Say hello")])


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def model(case: Case, server: LoopbackServer) -> AsyncIterator[Model]:
    async with case.open(server) as built:
        yield built


async def collect(model: Model, request: ModelRequest) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request)]


async def drain(model: Model, request: ModelRequest, into: list[StreamChunk]) -> None:
    """Stream into `into`, so a test sees what arrived before an error."""
    async for chunk in model.stream(request):
        into.append(chunk)


def aggregate(chunks: list[StreamChunk]) -> ChunkAggregator:
    aggregator = ChunkAggregator()
    for chunk in chunks:
        aggregator.add(chunk)
    return aggregator


async def test_text_streams_as_deltas_with_usage(
    case: Case, server: LoopbackServer
) -> None:
    """Also the one test of the default path: the model builds its own SDK client."""
    server.script(fixture(case.fixtures, "text"))
    model = case.model(server)
    try:
        chunks = await collect(model, HELLO)
    finally:
        await model.aclose()
    texts = [c for c in chunks if isinstance(c, TextChunk)]
    assert [c.text for c in texts] == ["Hello", ", wor", "ld!"]
    assert {c.block for c in texts} == {0}
    end = chunks[-1]
    assert isinstance(end, StreamEnd)
    assert end.stop_reason is StopReason.END_TURN
    assert end.usage == Usage(
        12, 5, cache_read_tokens=3, cache_write_tokens=2, requests=1
    )
    assert end.model is not None
    assert aggregate(chunks).response().text == "Hello, world!"
    assert server.requests[0].path == case.path
    assert server.requests[0].body["stream"] is True


async def test_several_tool_calls_in_one_response(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    server.script(fixture(case.fixtures, "tools"))
    response = await model.complete(
        ModelRequest([Message("user", "look")], tools=TOOLS)
    )
    prefix = "toolu" if case.id == "anthropic" else "call"
    assert response.content == (
        Text("Let me look."),
        ToolCall(f"{prefix}_01A", "read", {"path": "a.py"}),
        ToolCall(f"{prefix}_01B", "grep", {"pattern": "TODO", "path": "src"}),
        ToolCall(f"{prefix}_01C", "glob", {"pattern": "*.md"}),
    )
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage.input_tokens == 472
    assert response.usage.output_tokens == 89


async def test_a_tool_call_is_ready_the_moment_its_block_closes(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    """Cut the stream right after the first call closed: it must already be out."""
    full = fixture(case.fixtures, "tools")
    server.script(
        SseReply(full.raw, cut_after_events=case.first_tool_events(full.events))
    )
    seen: list[StreamChunk] = []
    with pytest.raises(ModelConnectionError) as caught:
        await drain(model, ModelRequest([Message("user", "look")], tools=TOOLS), seen)
    ready = [c.call.name for c in seen if isinstance(c, ToolUseReady)]
    assert ready == ["read"]
    assert caught.value.__cause__ is not None


async def test_thinking_is_kept_verbatim_and_sent_back(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    server.script(fixture(case.fixtures, "thinking"), fixture(case.fixtures, "text"))
    chunks = await collect(model, HELLO)
    assert any(isinstance(c, ReasoningChunk) for c in chunks)
    response = aggregate(chunks).response()
    assert response.content == (*case.thinking, Text("Hi!"))
    follow_up = ModelRequest(
        [Message("user", "Say hello"), response.to_message(), Message("user", "again")]
    )
    await model.complete(follow_up)
    wire = str(server.requests[1].body)
    if case.id == "anthropic":
        assert (
            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" in wire
        )  # signature
        assert (
            "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP" in wire
        )
    elif case.id == "openai_responses":
        assert "gAAAAABoFull-encrypted-reasoning==" in wire
        assert "rs_01R" in wire
    else:  # Chat Completions has no field for reasoning: nothing is sent back
        assert "I should greet." not in wire


def _stop_params() -> Iterator[Any]:
    for case in CASES:
        for substitutions, expected, raw in case.stop_cases:
            yield pytest.param(
                case, substitutions, expected, raw, id=f"{case.id}-{raw}"
            )


@pytest.mark.parametrize(
    ("stop_case", "substitutions", "expected", "raw"), list(_stop_params())
)
async def test_every_stop_reason_maps(
    server: LoopbackServer,
    stop_case: Case,
    substitutions: dict[str, str],
    expected: StopReason,
    raw: str,
) -> None:
    server.script(fixture(stop_case.fixtures, "stop", **substitutions))
    async with stop_case.open(server) as model:
        response = await model.complete(HELLO)
    assert response.stop_reason is expected
    assert response.raw_stop_reason == raw
    assert response.text == "ok"


async def test_a_tool_call_truncated_at_max_tokens_keeps_its_raw_arguments(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    server.script(fixture(case.fixtures, "truncated_tool"))
    response = await model.complete(
        ModelRequest([Message("user", "write")], tools=TOOLS)
    )
    assert response.stop_reason is StopReason.MAX_TOKENS
    (call,) = response.tool_calls
    assert call.name == "write"
    assert call.input == {}
    assert call.raw_arguments == '{"path": "notes.md", "content": "# Notes\\nThe first'


async def test_a_refusal_is_reported_as_such(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    server.script(fixture(case.fixtures, "refusal"))
    response = await model.complete(HELLO)
    assert response.stop_reason is StopReason.REFUSAL
    assert response.text == "I can't help with that."


async def test_a_connection_cut_mid_stream_raises_after_the_chunks_received(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    text = fixture(case.fixtures, "text")
    first_delta = next(i for i, e in enumerate(text.events) if "Hello" in e)
    server.script(SseReply(text.raw, cut_after_events=first_delta + 1))
    seen: list[StreamChunk] = []
    with pytest.raises(ModelConnectionError) as caught:
        await drain(model, HELLO, seen)
    assert seen == [TextChunk("Hello", block=0)]
    assert caught.value.__cause__ is not None


async def test_a_stream_that_ends_early_but_cleanly_is_a_cut(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    """The HTTP body ends properly, but the provider never said the message was done."""
    text = fixture(case.fixtures, "text")
    first_delta = next(i for i, e in enumerate(text.events) if "Hello" in e)
    server.script(SseReply("".join(text.events[: first_delta + 1])))
    with pytest.raises(ModelConnectionError):
        await model.complete(HELLO)


async def test_an_error_sent_inside_the_stream_is_mapped(
    case: Case, server: LoopbackServer, model: Model
) -> None:
    server.script(fixture(case.fixtures, "stream_error"))
    seen: list[StreamChunk] = []
    with pytest.raises(case.stream_error):
        await drain(model, HELLO, seen)
    assert seen == [TextChunk("Partial", block=0)]
