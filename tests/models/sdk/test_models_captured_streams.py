"""Real captured provider streams, replayed through the official SDKs and our mappers.

The fixtures in ``tests/models/fixtures/`` are byte-for-byte recordings of live
API traffic kept by other projects (tests/models/fixtures/README.md names each
source). The recorded-shape fixtures next to this file are ours; these are the
providers' own. Where no live recording of a case exists (a Chat or Responses
stream cut by the token limit *inside* a tool call), the case is derived from a
real recording by cutting it and closing it the way that provider closes a cut
stream; the derivation is done here, in code, so the data files stay as captured.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from models_loopback import LoopbackServer, SseReply
from models_sdk_cases import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, Case

import toolweave as tw
from toolweave.messages import Message, ModelResponse, StopReason, ToolCall
from toolweave.models import ModelRequest, ToolDefinition

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

CAPTURED = Path(__file__).parents[1] / "fixtures"
ASK = ModelRequest(
    [Message("user", "go")],
    tools=(ToolDefinition("any", "", {"type": "object", "properties": {}}),),
)


def captured(provider: str, name: str) -> SseReply:
    return SseReply((CAPTURED / provider / f"{name}.sse").read_text())


async def complete(
    case: Case, server: LoopbackServer, reply: SseReply
) -> ModelResponse:
    server.script(reply)
    async with case.open(server) as model:
        return await model.complete(ASK)


def _cut_chat(reply: SseReply, keep_argument_deltas: int) -> SseReply:
    """The real stream, cut after `keep_argument_deltas` argument chunks, closed with `length`."""
    kept: list[str] = []
    deltas = 0
    template: dict[str, object] = {}
    for event in reply.events:
        payload = event.removeprefix("data: ").strip()
        if payload == "[DONE]":
            break
        chunk = json.loads(payload)
        template = chunk
        calls = (chunk["choices"] or [{}])[0].get("delta", {}).get("tool_calls") or []
        if any(c.get("function", {}).get("arguments") for c in calls):
            if deltas == keep_argument_deltas:
                break
            deltas += 1
        kept.append(event)
    closing = dict(template)
    closing["choices"] = [
        {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}
    ]
    closing.pop("usage", None)
    kept.append(f"data: {json.dumps(closing)}\n\n")
    kept.append("data: [DONE]\n\n")
    return SseReply("".join(kept))


def _cut_responses(reply: SseReply, keep_argument_deltas: int) -> SseReply:
    """The real stream, cut mid-arguments, closed by ``response.incomplete`` (max_output_tokens)."""
    kept: list[str] = []
    deltas = 0
    final: dict[str, object] = {}
    for event in reply.events:
        data = next(line for line in event.splitlines() if line.startswith("data: "))
        payload = json.loads(data.removeprefix("data: "))
        kind = payload["type"]
        if kind == "response.completed":
            final = payload
            break
        if kind == "response.function_call_arguments.delta":
            if deltas == keep_argument_deltas:
                continue
            deltas += 1
        if kind in (
            "response.function_call_arguments.done",
            "response.output_item.done",
        ):
            continue
        kept.append(event)
    response = dict(final["response"])  # type: ignore[arg-type]
    response.update(
        status="incomplete",
        incomplete_details={"reason": "max_output_tokens"},
        output=[],
    )
    closing = {"type": "response.incomplete", "response": response}
    kept.append(f"event: response.incomplete\ndata: {json.dumps(closing)}\n\n")
    return SseReply("".join(kept))


# -- Anthropic ------------------------------------------------------------------


async def test_anthropic_captured_tool_use(server: LoopbackServer) -> None:
    response = await complete(ANTHROPIC, server, captured("anthropic", "tool_use"))
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.text == "I'll check the current weather in Paris for you."
    assert response.tool_calls == (
        ToolCall(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather", {"location": "Paris"}
        ),
    )


async def test_anthropic_captured_cut_inside_a_tool_use_keeps_the_partial_call(
    server: LoopbackServer,
) -> None:
    """The live stream goes from input_json_delta straight to message_delta(max_tokens)."""
    reply = captured("anthropic", "max_tokens_inside_tool_use")
    assert 'content_block_stop","index":1' not in reply.raw.replace(" ", "")
    response = await complete(ANTHROPIC, server, reply)
    assert response.stop_reason is StopReason.MAX_TOKENS
    (call,) = response.tool_calls
    assert (call.id, call.name, dict(call.input)) == (
        "toolu_01EKqbqmZrGRXy18eN7m9kvY",
        "make_file",
        {},
    )
    assert call.raw_arguments is not None
    assert call.raw_arguments.startswith('{"filename": "taxes.txt", "lines_of_text": [')
    assert call.raw_arguments.endswith('\n"Filing taxes')


async def test_the_agent_refuses_the_cut_call_and_asks_again(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Through tw.Agent: the cut call is answered as refused (never run), the run goes on."""
    ran: list[object] = []

    @tw.tool
    def make_file(filename: str, lines_of_text: list[str]) -> str:
        """Write a file."""
        ran.append(filename)
        return "written"

    text = (Path(__file__).parent / "fixtures" / "anthropic" / "text.sse").read_text()
    server.script(captured("anthropic", "max_tokens_inside_tool_use"), SseReply(text))
    async with ANTHROPIC.open(server) as model:
        agent = tw.Agent(model, [make_file])
        try:
            result = await agent.run("Write my tax guide.")
        finally:
            await agent.aclose()
    assert ran == []
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    follow_up = server.requests[1].body["messages"]
    uses = [
        b for m in follow_up if isinstance(m["content"], list) for b in m["content"]
    ]
    (use,) = [b for b in uses if b["type"] == "tool_use"]
    (answer,) = [b for b in uses if b["type"] == "tool_result"]
    assert use["id"] == answer["tool_use_id"] == "toolu_01EKqbqmZrGRXy18eN7m9kvY"
    assert answer["is_error"] is True


# -- OpenAI Chat Completions --------------------------------------------------------


async def test_chat_captured_tool_call(server: LoopbackServer) -> None:
    response = await complete(OPENAI_CHAT, server, captured("openai_chat", "tool_call"))
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.tool_calls == (
        ToolCall(
            "call_4XzlGBLtUe9dy3GVNV4jhq7h", "get_weather", {"city": "New York City"}
        ),
    )


async def test_chat_captured_parallel_tool_calls(server: LoopbackServer) -> None:
    reply = captured("openai_chat", "parallel_tool_calls")
    response = await complete(OPENAI_CHAT, server, reply)
    assert response.stop_reason is StopReason.TOOL_USE
    assert [(c.id, c.name) for c in response.tool_calls] == [
        ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs"),
        ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price"),
    ]
    assert all(c.raw_arguments is None for c in response.tool_calls)
    assert response.tool_calls[1].input == {"ticker": "AAPL", "exchange": "NASDAQ"}


async def test_chat_captured_length_cut(server: LoopbackServer) -> None:
    response = await complete(OPENAI_CHAT, server, captured("openai_chat", "length"))
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.raw_stop_reason == "length"
    assert response.tool_calls == ()


@pytest.mark.parametrize("keep", [1, 3])
async def test_chat_cut_inside_the_second_parallel_call_keeps_both(
    server: LoopbackServer, keep: int
) -> None:
    real = captured("openai_chat", "parallel_tool_calls")
    first_call_deltas = sum(
        1
        for e in real.events
        if '"index":0,"function":{"arguments"' in e.replace(" ", "")
    )
    reply = _cut_chat(real, first_call_deltas + keep)
    response = await complete(OPENAI_CHAT, server, reply)
    assert response.stop_reason is StopReason.MAX_TOKENS
    first, second = response.tool_calls
    assert first.raw_arguments is None and first.input
    assert second.id == "call_DNYTawLBoN8fj3KN6qU9N1Ou"
    assert second.input == {}
    assert second.raw_arguments is not None
    assert not second.raw_arguments.endswith("}")


# -- OpenAI Responses ---------------------------------------------------------------


async def test_responses_captured_tool_call(server: LoopbackServer) -> None:
    reply = captured("openai_responses", "tool_call")
    response = await complete(OPENAI_RESPONSES, server, reply)
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.tool_calls == (
        ToolCall("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"}),
    )


async def test_responses_captured_index_numbered_ids(server: LoopbackServer) -> None:
    """Bedrock Mantle names calls by output position: ``call_0``, ``call_1``."""
    first = await complete(
        OPENAI_RESPONSES, server, captured("openai_responses", "mantle_turn1_call_0")
    )
    second = await complete(
        OPENAI_RESPONSES, server, captured("openai_responses", "mantle_turn2_call_1")
    )
    assert [(c.id, c.name) for c in first.tool_calls] == [("call_0", "first_tool")]
    assert [(c.id, c.name) for c in second.tool_calls] == [("call_1", "second_tool")]


@pytest.mark.parametrize("keep", [1, 3])
async def test_responses_cut_inside_a_call_keeps_it(
    server: LoopbackServer, keep: int
) -> None:
    reply = _cut_responses(captured("openai_responses", "tool_call"), keep)
    response = await complete(OPENAI_RESPONSES, server, reply)
    assert response.stop_reason is StopReason.MAX_TOKENS
    (call,) = response.tool_calls
    assert (call.id, call.name, dict(call.input)) == (
        "call_kL0PCQV7M2WMoVX8V8OtYSAL",
        "get_capital",
        {},
    )
    assert call.raw_arguments == {1: '{"', 3: '{"country":"'}[keep]
