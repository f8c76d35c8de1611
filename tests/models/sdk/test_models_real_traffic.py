"""More real recorded provider traffic, replayed end to end and sent back again.

Every fixture named here is a recording of live API traffic kept by another
project (tests/models/fixtures/README.md names repository, path and commit).
Each case replays one recording through the official SDK and our mapper and
asserts the neutral response (text, thinking and its signature, tool calls
with parsed input in order, stop reason, usage); then it sends that response
back to the same provider, answered by tool results, and checks the request
the SDK put on the wire is one the provider accepts: thinking verbatim with its
signature, every tool call answered once, right after it, ids unique.

Some recordings are kept as newline-delimited JSON events (the Vercel AI SDK's
``*.chunks.txt``) or as whole JSON bodies (``stream=False``); the wire format
is rebuilt here, in code, so the data files stay as captured.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from models_loopback import JsonReply, LoopbackServer, Reply, SseReply
from models_sdk_cases import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, Case

import toolweave as tw
from toolweave.messages import (
    Message,
    ModelResponse,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from toolweave.models import ModelRequest, ToolDefinition
from toolweave.models._openai_responses_convert import responses_input

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

CAPTURED = Path(__file__).parents[1] / "fixtures"
SDK_FIXTURES = Path(__file__).parent / "fixtures"


def _ask(*names: str) -> ModelRequest:
    tools = tuple(
        ToolDefinition(n, "", {"type": "object", "properties": {}})
        for n in names or ("any",)
    )
    return ModelRequest([Message("user", "go")], tools=tools)


def sse(provider: str, name: str) -> SseReply:
    return SseReply((CAPTURED / provider / name).read_text())


def ndjson_as_sse(provider: str, name: str, *, named: bool) -> SseReply:
    """One JSON event a line, as the SSE the provider sent (``event:`` lines if `named`)."""
    out = []
    for line in (CAPTURED / provider / name).read_text().splitlines():
        if not line.strip():
            continue
        kind = json.loads(line).get("type") if named else None
        head = f"event: {kind}\n" if kind else ""
        out.append(f"{head}data: {line}\n\n")
    if not named:
        out.append("data: [DONE]\n\n")
    return SseReply("".join(out))


def whole(provider: str, name: str) -> JsonReply:
    return JsonReply(200, json.loads((CAPTURED / provider / name).read_text()))


async def replay(
    case: Case,
    server: LoopbackServer,
    reply: Reply,
    *tools: str,
    stream: bool = True,
) -> ModelResponse:
    server.script(reply)
    async with case.open(server, stream=stream) as model:
        return await model.complete(_ask(*tools))


async def send_back(
    case: Case,
    server: LoopbackServer,
    response: ModelResponse,
    *tools: str,
    **options: Any,
) -> Any:
    """The response, answered by a result per call, sent again: the wire body."""
    results = tuple(
        ToolResult(call.id, f"result of {call.name}") for call in response.tool_calls
    )
    messages = [Message("user", "go"), response.to_message()]
    if results:
        messages.append(Message("user", results))
    else:
        messages.append(Message("user", "go on"))
    text = (SDK_FIXTURES / case.fixtures / "text.sse").read_text()
    server.script(SseReply(text))
    request = ModelRequest(messages, tools=_ask(*tools).tools)
    async with case.open(server, **options) as model:
        await model.complete(request)
    return server.requests[-1].body


# -- wire validators: what each provider checks on a follow-up request ---------------


def valid_anthropic(body: dict[str, Any], response: ModelResponse) -> None:
    messages = body["messages"]
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in pairwise(roles)), roles
    ids = [
        b["id"]
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    assert len(ids) == len(set(ids)), ids
    for index, message in enumerate(messages):
        if message["role"] != "assistant" or isinstance(message["content"], str):
            continue
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if not uses:
            continue
        answer = messages[index + 1]["content"]
        answered = [b["tool_use_id"] for b in answer if b["type"] == "tool_result"]
        assert answered == uses
        assert all(b["type"] == "tool_result" for b in answer[: len(uses)])
    (sent,) = [m for m in messages if m["role"] == "assistant"]
    thinking = [
        (b.get("thinking"), b.get("signature"), b.get("data"))
        for b in sent["content"]
        if b["type"] in ("thinking", "redacted_thinking")
    ]
    assert thinking == [
        (
            None if b.redacted_data is not None else b.text,
            None if b.redacted_data is not None else b.signature,
            b.redacted_data,
        )
        for b in response.content
        if isinstance(b, Thinking)
    ]
    for block in sent["content"]:
        if block["type"] == "thinking":
            assert block["signature"]
        if block["type"] == "text":
            assert block["text"]
    # Thinking leads the assistant turn that carries it (the API rejects it later).
    kinds = [b["type"] for b in sent["content"]]
    leading = [k for k in kinds if k in ("thinking", "redacted_thinking")]
    if leading and kinds[0] not in ("thinking", "redacted_thinking"):
        pytest.fail(f"thinking does not lead the turn: {kinds}")


# -- Anthropic ----------------------------------------------------------------------


async def test_anthropic_thinking_signature_streamed(server: LoopbackServer) -> None:
    response = await replay(ANTHROPIC, server, sse("anthropic", "thinking.sse"))
    assert response.stop_reason is StopReason.END_TURN
    (thinking,) = [b for b in response.content if isinstance(b, Thinking)]
    assert thinking.text.startswith("This is a straightforward question")
    assert thinking.signature is not None and thinking.signature.startswith("EvM")
    assert response.content[0] is thinking
    assert response.text.startswith("Here are")
    assert response.usage.input_tokens == 43
    assert response.usage.output_tokens > 0
    valid_anthropic(await send_back(ANTHROPIC, server, response), response)


async def test_anthropic_redacted_thinking_streamed(server: LoopbackServer) -> None:
    response = await replay(
        ANTHROPIC, server, sse("anthropic", "redacted_thinking.sse")
    )
    first, second, text = response.content
    assert isinstance(first, Thinking) and isinstance(second, Thinking)
    assert first.text == second.text == ""
    assert first.redacted_data and first.redacted_data.startswith("EqkECkYIBxgC")
    assert second.redacted_data and second.redacted_data.startswith("EtgBCkYIBxgC")
    assert isinstance(text, Text) and text.text
    valid_anthropic(await send_back(ANTHROPIC, server, response), response)


async def test_anthropic_thinking_then_tool_use_without_arguments(
    server: LoopbackServer,
) -> None:
    """Whole (stream=False) recording: thinking, text, then a call with ``input: {}``."""
    reply = whole("anthropic", "thinking_tool_use.json")
    response = await replay(ANTHROPIC, server, reply, "get_user_country", stream=False)
    thinking, text, call = response.content
    assert isinstance(thinking, Thinking) and thinking.signature
    assert thinking.signature.endswith("YAQ==")
    assert isinstance(text, Text) and text.text.startswith("I'll help you")
    assert call == ToolCall("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country", {})
    assert response.stop_reason is StopReason.TOOL_USE
    assert (response.usage.input_tokens, response.usage.output_tokens) == (398, 155)
    body = await send_back(ANTHROPIC, server, response, "get_user_country")
    valid_anthropic(body, response)
    assert body["messages"][1]["content"][2]["input"] == {}


async def test_anthropic_tool_use_with_empty_input_json(server: LoopbackServer) -> None:
    """The only ``input_json_delta`` of the call is ``""``: a call with no arguments."""
    reply = ndjson_as_sse("anthropic", "tool_no_args.chunks.txt", named=True)
    assert '"partial_json":""' in reply.raw
    response = await replay(ANTHROPIC, server, reply, "updateIssueList")
    assert response.text == "I'll update the issue list for you."
    assert response.tool_calls == (
        ToolCall("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList", {}),
    )
    assert response.tool_calls[0].raw_arguments is None
    assert response.stop_reason is StopReason.TOOL_USE
    assert (response.usage.input_tokens, response.usage.output_tokens) == (565, 48)
    body = await send_back(ANTHROPIC, server, response, "updateIssueList")
    valid_anthropic(body, response)


async def test_anthropic_four_parallel_tool_uses_whole(server: LoopbackServer) -> None:
    reply = whole("anthropic", "parallel_tool_use.json")
    response = await replay(
        ANTHROPIC, server, reply, "retrieve_entity_info", stream=False
    )
    assert [(c.id, dict(c.input)) for c in response.tool_calls] == [
        ("toolu_0167cfEnoQaPviGdVXA95zcu", {"name": "Alice"}),
        ("toolu_01EEe2V5HD1Ac4rKiUR4HD2T", {"name": "Bob"}),
        ("toolu_01XFyAjstT3966qvRynZyVPo", {"name": "Charlie"}),
        ("toolu_013mnQZbgtK2oe3Mo3XKJsx3", {"name": "Daisy"}),
    ]
    assert isinstance(response.content[0], Text)
    assert response.stop_reason is StopReason.TOOL_USE
    body = await send_back(ANTHROPIC, server, response, "retrieve_entity_info")
    valid_anthropic(body, response)
    assert len(body["messages"][2]["content"]) == 4


def _anthropic_events(name: str) -> list[dict[str, Any]]:
    raw = (CAPTURED / "anthropic" / name).read_text()
    return [
        json.loads(line.removeprefix("data: "))
        for line in raw.splitlines()
        if line.startswith("data: ")
    ]


async def test_anthropic_web_search_with_thinking_and_citations(
    server: LoopbackServer,
) -> None:
    """Server tool blocks (``server_tool_use``, results) and citations are not client calls."""
    name = "web_search_thinking_citations.sse"
    response = await replay(ANTHROPIC, server, sse("anthropic", name))
    events = _anthropic_events(name)
    expected_text = "".join(
        e["delta"]["text"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
    ) + "".join(
        e["content_block"].get("text", "")
        for e in events
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "text"
    )
    assert response.text == expected_text
    assert response.tool_calls == ()
    assert response.stop_reason is StopReason.END_TURN
    (thinking,) = [b for b in response.content if isinstance(b, Thinking)]
    signature = "".join(
        e["delta"]["signature"]
        for e in events
        if e["type"] == "content_block_delta"
        and e["delta"]["type"] == "signature_delta"
    )
    assert thinking.signature == signature
    assert response.content[0] is thinking
    body = await send_back(ANTHROPIC, server, response)
    valid_anthropic(body, response)


async def test_anthropic_pause_turn_keeps_raw_reason_and_thinking(
    server: LoopbackServer,
) -> None:
    response = await replay(ANTHROPIC, server, sse("anthropic", "pause_turn.sse"))
    assert response.stop_reason is StopReason.UNKNOWN
    assert response.raw_stop_reason == "pause_turn"
    assert response.tool_calls == ()
    (thinking,) = [b for b in response.content if isinstance(b, Thinking)]
    assert thinking.signature
    body = await send_back(ANTHROPIC, server, response)
    valid_anthropic(body, response)


# -- OpenAI Chat Completions --------------------------------------------------------


def valid_chat(body: dict[str, Any], response: ModelResponse) -> None:
    messages = body["messages"]
    ids = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    assert len(ids) == len(set(ids)), ids
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if message["role"] == "assistant":
            assert message.get("content") or calls, message
        for call in calls:
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
        answers = messages[index + 1 : index + 1 + len(calls)]
        assert [(m["role"], m["tool_call_id"]) for m in answers] == [
            ("tool", c["id"]) for c in calls
        ]
    (sent,) = [m for m in messages if m["role"] == "assistant"]
    assert [c["id"] for c in sent.get("tool_calls") or ()] == [
        c.id for c in response.tool_calls
    ]


def _chat_choice_text(name: str, field: str, index: int = 0) -> str:
    out = []
    for line in (CAPTURED / "openai_chat" / name).read_text().splitlines():
        payload = line.removeprefix("data: ")
        if not line.startswith("data: ") or payload == "[DONE]":
            continue
        for choice in json.loads(payload)["choices"]:
            if choice["index"] == index:
                out.append(choice["delta"].get(field) or "")
    return "".join(out)


async def test_chat_refusal_stream(server: LoopbackServer) -> None:
    response = await replay(OPENAI_CHAT, server, sse("openai_chat", "refusal.sse"))
    assert response.stop_reason is StopReason.REFUSAL
    assert response.raw_stop_reason == "stop"
    assert response.text == _chat_choice_text("refusal.sse", "refusal")
    assert response.text.startswith("I'm sorry")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (79, 11)
    valid_chat(await send_back(OPENAI_CHAT, server, response), response)


async def test_chat_refusal_with_logprobs(server: LoopbackServer) -> None:
    reply = sse("openai_chat", "refusal_logprobs.sse")
    response = await replay(OPENAI_CHAT, server, reply)
    assert response.stop_reason is StopReason.REFUSAL
    assert response.text == "I'm very sorry, but I can't assist with that."
    assert (response.usage.input_tokens, response.usage.output_tokens) == (79, 12)
    valid_chat(await send_back(OPENAI_CHAT, server, response), response)


async def test_chat_text_with_logprobs(server: LoopbackServer) -> None:
    response = await replay(OPENAI_CHAT, server, sse("openai_chat", "logprobs.sse"))
    assert response.stop_reason is StopReason.END_TURN
    assert response.text == "Foo!"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 2)
    valid_chat(await send_back(OPENAI_CHAT, server, response), response)


async def test_chat_several_choices_keep_the_first_only(
    server: LoopbackServer,
) -> None:
    """An ``n=3`` stream interleaves three choices; the response is choice 0's."""
    reply = sse("openai_chat", "n_3_choices.sse")
    response = await replay(OPENAI_CHAT, server, reply)
    first = _chat_choice_text("n_3_choices.sse", "content", 0)
    assert first != _chat_choice_text("n_3_choices.sse", "content", 1)
    assert response.text == first
    assert json.loads(response.text)["city"] == "San Francisco"
    assert response.stop_reason is StopReason.END_TURN
    valid_chat(await send_back(OPENAI_CHAT, server, response), response)


async def test_chat_azure_prompt_filter_chunk_with_blank_model(
    server: LoopbackServer,
) -> None:
    """Azure leads with ``choices: []``, blank id and model; the model comes later."""
    reply = ndjson_as_sse("openai_chat", "azure_prompt_filter.chunks.txt", named=False)
    response = await replay(OPENAI_CHAT, server, reply)
    assert response.text.startswith("Capital of Denmark")
    assert response.stop_reason is StopReason.END_TURN
    assert response.model == "gpt-5-nano-2025-08-07"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (15, 78)
    valid_chat(await send_back(OPENAI_CHAT, server, response), response)


# -- OpenAI Responses ---------------------------------------------------------------


def responses_turns(name: str) -> list[list[dict[str, Any]]]:
    """The recording's events, one list per response (a file may hold several turns)."""
    turns: list[list[dict[str, Any]]] = []
    for line in (CAPTURED / "openai_responses" / name).read_text().splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        if event["type"] == "response.created":
            turns.append([])
        turns[-1].append(event)
    return turns


def as_sse(events: list[dict[str, Any]]) -> SseReply:
    """Responses events framed as OpenAI sends them: ``event:`` names the type."""
    return SseReply(
        "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    )


def _done_items(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == kind
    ]


def valid_responses(
    body: dict[str, Any], response: ModelResponse, *, store: bool = False
) -> None:
    items = body["input"]
    call_ids = [i["call_id"] for i in items if i.get("type") == "function_call"]
    assert len(call_ids) == len(set(call_ids)), call_ids
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert outputs == call_ids
    for index, item in enumerate(items):
        if item.get("type") == "function_call":
            assert isinstance(json.loads(item["arguments"]), dict)
            later = [i.get("call_id") for i in items[index + 1 :]]
            assert item["call_id"] in later
    sent = [
        (i["id"], i.get("encrypted_content"))
        for i in items
        if i.get("type") == "reasoning"
    ]
    # Reasoning goes back verbatim when the item it produced goes back too, and,
    # stateless, only with its encrypted content (an id alone names nothing).
    blocks = list(response.content)
    assert sent == [
        (b.provider_id, b.encrypted_content)
        for b, after in zip(blocks, [*blocks[1:], None], strict=True)
        if isinstance(b, Thinking)
        and isinstance(after, Text | ToolCall)
        and (store or b.encrypted_content is not None)
    ]
    assert body["store"] is store
    for index, item in enumerate(items):
        if item.get("type") == "reasoning":
            following = items[index + 1]
            assert following.get("type") in ("function_call", "message", None), item
            assert following.get("type") or following["role"]
    _valid_item_ids(items, response)


_PREFIX = {"function_call": "fc_", "message": "msg_"}


def _valid_item_ids(items: list[dict[str, Any]], response: ModelResponse) -> None:
    """Item ids pair with reasoning: the item after a reasoning item carries its id.

    Only ``fc_``/``msg_`` ids go (never a ``call_`` id), and only in an
    assistant turn whose reasoning is sent.
    """
    reasoning_seen = False
    for item in items:
        kind = item.get("type")
        written = kind in _PREFIX or item.get("role") == "assistant"
        if kind == "reasoning":
            reasoning_seen = True
        elif not written:
            reasoning_seen = False  # a user turn or a tool result: a new turn
        elif "id" in item:
            assert item["id"].startswith(_PREFIX[kind]), item
            assert reasoning_seen, item
    blocks = list(response.content)
    for block, after in zip(blocks, [*blocks[1:], None], strict=True):
        if not isinstance(block, Thinking) or not isinstance(after, Text | ToolCall):
            continue
        sent = [i for i, it in enumerate(items) if it.get("id") == block.provider_id]
        if not sent:
            continue
        following = items[sent[0] + 1]
        kind = "function_call" if isinstance(after, ToolCall) else "message"
        item_id = after.provider_id
        if item_id is not None and item_id.startswith(_PREFIX[kind]):
            assert following.get("id") == item_id, following
        else:
            assert "id" not in following, following


@pytest.mark.parametrize(
    "name",
    [
        "reasoning_encrypted_content.chunks.txt",
        "azure_reasoning_encrypted_content.chunks.txt",
    ],
)
async def test_responses_reasoning_encrypted_then_function_call(
    server: LoopbackServer, name: str
) -> None:
    """Turn 1: a reasoning item whose encrypted content changes at ``done``, then a call."""
    events = responses_turns(name)[0]
    (reasoning,) = _done_items(events, "reasoning")
    (call_item,) = _done_items(events, "function_call")
    (added,) = [
        e["item"]
        for e in events
        if e["type"] == "response.output_item.added"
        and e["item"]["type"] == "reasoning"
    ]
    assert added["encrypted_content"] != reasoning["encrypted_content"]
    response = await replay(OPENAI_RESPONSES, server, as_sse(events), "calculate")
    thinking, call = response.content
    assert isinstance(thinking, Thinking)
    assert thinking.provider_id == reasoning["id"]
    assert thinking.encrypted_content == reasoning["encrypted_content"]
    assert thinking.text == "\n\n".join(s["text"] for s in reasoning["summary"])
    assert call == ToolCall(
        call_item["call_id"], call_item["name"], json.loads(call_item["arguments"])
    )
    assert response.stop_reason is StopReason.TOOL_USE
    usage = events[-1]["response"]["usage"]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (
        usage["input_tokens"],
        usage["output_tokens"],
    )
    body = await send_back(OPENAI_RESPONSES, server, response, "calculate")
    valid_responses(body, response)


async def test_responses_later_turns_call_then_text(server: LoopbackServer) -> None:
    turns = responses_turns("reasoning_encrypted_content.chunks.txt")
    assert len(turns) == 4
    for events in turns[1:3]:
        (item,) = _done_items(events, "function_call")
        response = await replay(OPENAI_RESPONSES, server, as_sse(events), "calculate")
        assert response.content == (
            ToolCall(item["call_id"], item["name"], json.loads(item["arguments"])),
        )
    response = await replay(OPENAI_RESPONSES, server, as_sse(turns[3]))
    expected = "".join(
        e["delta"] for e in turns[3] if e["type"] == "response.output_text.delta"
    )
    assert response.text == expected and expected
    assert response.stop_reason is StopReason.END_TURN
    valid_responses(await send_back(OPENAI_RESPONSES, server, response), response)


async def test_responses_web_search_reasoning_and_annotations(
    server: LoopbackServer,
) -> None:
    """Hosted web search: its items are the provider's; the text and reasoning are ours."""
    (events,) = responses_turns("web_search_tool.chunks.txt")
    response = await replay(OPENAI_RESPONSES, server, as_sse(events))
    expected = "".join(
        e["delta"] for e in events if e["type"] == "response.output_text.delta"
    )
    assert response.text == expected
    assert response.tool_calls == ()
    assert response.stop_reason is StopReason.END_TURN
    assert response.model == "gpt-5-mini-2025-08-07"
    assert response.usage.cache_read_tokens == 3712
    assert response.usage.input_tokens == 31073 - 3712
    reasoning = _done_items(events, "reasoning")
    assert len(reasoning) > 1
    thinking = [b for b in response.content if isinstance(b, Thinking)]
    assert [b.provider_id for b in thinking] == [r["id"] for r in reasoning]
    assert not any(r.get("encrypted_content") for r in reasoning)
    valid_responses(await send_back(OPENAI_RESPONSES, server, response), response)
    body = await send_back(OPENAI_RESPONSES, server, response, store=True)
    valid_responses(body, response, store=True)
    # Only the last reasoning item led to the message; the others led to searches.
    sent = [i["id"] for i in body["input"] if i.get("type") == "reasoning"]
    assert sent == [reasoning[-1]["id"]]


async def test_responses_stream_error_then_failed(server: LoopbackServer) -> None:
    """``error`` (insufficient_quota) then ``response.failed``: a quota error, not a retry."""
    (events,) = responses_turns("error.chunks.txt")
    assert [e["type"] for e in events][-2:] == ["error", "response.failed"]
    with pytest.raises(tw.ModelError) as caught:
        await replay(OPENAI_RESPONSES, server, as_sse(events))
    assert "exceeded your current quota" in str(caught.value)
    assert not getattr(caught.value, "retryable", False)


def _rs(n: int) -> Thinking:
    return Thinking(f"r{n}", provider_id=f"rs_{n}", encrypted_content=f"enc{n}")


_CALL = ToolCall("call_1", "f", {}, provider_id="fc_1")
_HI = Text("hi", provider_id="msg_1")


@pytest.mark.parametrize(
    ("blocks", "sent"),
    [
        ((_rs(1), _HI), ["rs_1"]),
        ((_rs(1), _CALL), ["rs_1"]),
        ((_rs(1), _rs(2), _rs(3), _HI), ["rs_3"]),
        ((_rs(1), _CALL, _rs(2)), ["rs_1"]),  # cut after reasoning: nothing followed
        ((_rs(1), Text("")), []),  # an empty text is not sent, so nothing follows
        ((_rs(1),), []),
        ((Text("a"), _rs(1), _CALL, _rs(2), _CALL), ["rs_1", "rs_2"]),
        ((Thinking("other provider"), _rs(1), _HI), ["rs_1"]),
        # followers without an id the API accepts cannot be paired: left out
        ((_rs(1), Text("hi")), []),
        ((_rs(1), ToolCall("call_1", "f", {})), []),
        ((_rs(1), ToolCall("call_1", "f", {}, provider_id="call_1")), []),
        (
            (_rs(1), ToolCall("call_1", "f", {}), _CALL),
            [],
        ),  # the first follower decides
    ],
)
def test_reasoning_goes_back_only_with_its_following_item(
    blocks: tuple[Any, ...], sent: list[str]
) -> None:
    calls = [b for b in blocks if isinstance(b, ToolCall)]
    messages = [Message("user", "go"), Message("assistant", blocks)]
    if calls:
        results = tuple(ToolResult(f"call_{i}", "ok") for i in range(len(calls)))
        messages.append(Message("user", results))
    items = responses_input(messages)
    assert [i["id"] for i in items if i.get("type") == "reasoning"] == sent
    kinds = [i.get("type", "message") for i in items]
    assert all(
        after != "reasoning" for kind, after in pairwise(kinds) if kind == "reasoning"
    )
    assert kinds[-1] != "reasoning"


# -- whole responses (stream=False) -------------------------------------------------


async def test_chat_whole_gemini_call_without_id_or_content(
    server: LoopbackServer,
) -> None:
    """Gemini's OpenAI endpoint: ``id: ""``, no ``content`` key, ``arguments: "{}"``."""
    reply = whole("openai_chat", "gemini_tool_call_without_id.json")
    message = reply.body["choices"][0]["message"]
    assert "content" not in message and message["tool_calls"][0]["id"] == ""
    response = await replay(
        OPENAI_CHAT, server, reply, "get_current_time", stream=False
    )
    (call,) = response.tool_calls
    assert (call.name, dict(call.input), call.raw_arguments) == (
        "get_current_time",
        {},
        None,
    )
    assert call.id  # filled: a provider needs an id to pair the result with
    assert response.stop_reason is StopReason.TOOL_USE
    assert (response.usage.input_tokens, response.usage.output_tokens) == (35, 12)
    body = await send_back(OPENAI_CHAT, server, response, "get_current_time")
    valid_chat(body, response)


async def test_responses_whole_reasoning_then_function_call(
    server: LoopbackServer,
) -> None:
    reply = whole("openai_responses", "reasoning_function_call.json")
    reasoning, item = reply.body["output"]
    response = await replay(
        OPENAI_RESPONSES, server, reply, "update_plan", stream=False
    )
    thinking, call = response.content
    assert isinstance(thinking, Thinking)
    assert thinking.provider_id == reasoning["id"]
    assert thinking.encrypted_content == reasoning["encrypted_content"]
    assert thinking.text == "\n\n".join(s["text"] for s in reasoning["summary"])
    assert call == ToolCall(
        item["call_id"], "update_plan", json.loads(item["arguments"])
    )
    assert response.stop_reason is StopReason.TOOL_USE
    assert (response.usage.input_tokens, response.usage.output_tokens) == (124, 1926)
    body = await send_back(OPENAI_RESPONSES, server, response, "update_plan")
    valid_responses(body, response)


async def test_responses_whole_web_search(server: LoopbackServer) -> None:
    reply = whole("openai_responses", "web_search_tool.json")
    output = reply.body["output"]
    response = await replay(OPENAI_RESPONSES, server, reply, stream=False)
    (message,) = [o for o in output if o["type"] == "message"]
    assert response.text == "".join(c["text"] for c in message["content"])
    assert response.tool_calls == ()
    assert response.stop_reason is StopReason.END_TURN
    valid_responses(await send_back(OPENAI_RESPONSES, server, response), response)
    body = await send_back(OPENAI_RESPONSES, server, response, store=True)
    valid_responses(body, response, store=True)
    sent = [i["id"] for i in body["input"] if i.get("type") == "reasoning"]
    assert sent == [output[-2]["id"]] and output[-2]["type"] == "reasoning"


# -- OpenAI-compatible Chat servers -------------------------------------------------


def _chat_reference(name: str) -> dict[str, Any]:
    """What the recording says, assembled independently of the mapper (choice 0 only)."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for line in (CAPTURED / "openai_chat" / name).read_text().splitlines():
        if not line.strip():
            continue
        for choice in json.loads(line).get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, list):  # typed parts
                for part in content:
                    if part["type"] == "text":
                        text.append(part["text"])
                    elif part["type"] == "thinking":
                        reasoning.extend(p["text"] for p in part["thinking"])
            else:
                text.append(content or "")
            reasoning.append(
                delta.get("reasoning_content") or delta.get("reasoning") or ""
            )
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(call["index"], {"name": "", "args": ""})
                function = call.get("function") or {}
                slot["name"] = slot["name"] or function.get("name") or ""
                slot["args"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [
            (calls[i]["name"], json.loads(calls[i]["args"] or "{}"))
            for i in sorted(calls)
        ],
        "finish": finish,
    }


@pytest.mark.parametrize(
    "name",
    [
        "mistral_reasoning_parts.chunks.txt",  # content as typed parts, thinking inside
        "deepseek_reasoning_tool_call.chunks.txt",  # reasoning_content, then a call
        "groq_tool_call_usage_in_x_groq.chunks.txt",  # content null, "{}" in one chunk
        "glm_incremental_tool_call.chunks.txt",  # arguments streamed piecemeal
        "xai_reasoning_tool_call.chunks.txt",  # reasoning_content, call in one chunk
    ],
)
async def test_compatible_chat_servers(server: LoopbackServer, name: str) -> None:
    expected = _chat_reference(name)
    names = sorted({n for n, _ in expected["calls"]})
    reply = ndjson_as_sse("openai_chat", name, named=False)
    response = await replay(OPENAI_CHAT, server, reply, *names)
    assert response.text == expected["text"]
    thinking = "".join(b.text for b in response.content if isinstance(b, Thinking))
    assert thinking == expected["reasoning"]
    assert [(c.name, dict(c.input)) for c in response.tool_calls] == expected["calls"]
    assert all(c.id and c.raw_arguments is None for c in response.tool_calls)
    assert response.raw_stop_reason == expected["finish"]
    assert response.stop_reason is (
        StopReason.TOOL_USE if expected["calls"] else StopReason.END_TURN
    )
    assert response.usage.output_tokens > 0
    body = await send_back(OPENAI_CHAT, server, response, *names)
    valid_chat(body, response)


async def test_mistral_typed_parts_whole(server: LoopbackServer) -> None:
    """The same Magistral answer, not streamed: ``message.content`` is a list of parts."""
    reply = whole("openai_chat", "mistral_reasoning_parts.json")
    response = await replay(OPENAI_CHAT, server, reply, stream=False)
    thinking, text = response.content
    assert isinstance(thinking, Thinking)
    assert (
        thinking.text == "The user is asking for 2+2. This is basic arithmetic. 2+2=4."
    )
    assert text == Text("2 + 2 = 4")
    assert response.stop_reason is StopReason.END_TURN
    valid_chat(await send_back(OPENAI_CHAT, server, response), response)


# -- Responses through a proxy that renames items on every event ---------------------


async def test_responses_copilot_rotating_item_ids(server: LoopbackServer) -> None:
    """GitHub Copilot's proxy gives every event of an item a new ``item_id``."""
    (events,) = responses_turns("copilot_id_rotation.chunks.txt")
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert len({e["item_id"] for e in deltas}) == len(deltas) > 1
    response = await replay(OPENAI_RESPONSES, server, as_sse(events))
    thinking, text = response.content
    assert isinstance(thinking, Thinking) and isinstance(text, Text)
    assert text.text == "".join(e["delta"] for e in deltas)
    summary = [
        e["delta"]
        for e in events
        if e["type"] == "response.reasoning_summary_text.delta"
    ]
    assert thinking.text == "".join(summary)
    assert response.stop_reason is StopReason.END_TURN
    valid_responses(await send_back(OPENAI_RESPONSES, server, response), response)


def _rotate_ids(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The real events with every item id renamed per event, as such a proxy does."""
    out = []
    for number, event in enumerate(json.loads(json.dumps(events))):
        if "item_id" in event:
            event["item_id"] = f"rotated-{number}"
        if "item" in event:
            event["item"]["id"] = f"rotated-{number}"
        out.append(event)
    return out


async def test_responses_rotating_ids_never_duplicate_a_call(
    server: LoopbackServer,
) -> None:
    """Derived from a real turn: reasoning, then a call whose argument deltas are renamed."""
    events = _rotate_ids(responses_turns("reasoning_encrypted_content.chunks.txt")[0])
    (item,) = _done_items(events, "function_call")
    response = await replay(OPENAI_RESPONSES, server, as_sse(events), item["name"])
    thinking, call = response.content
    assert isinstance(thinking, Thinking) and thinking.text
    assert call == ToolCall(
        item["call_id"], item["name"], json.loads(item["arguments"])
    )
    assert response.stop_reason is StopReason.TOOL_USE


# -- whole responses holding blocks the installed SDK does not model ----------------


async def test_anthropic_whole_with_mcp_blocks(server: LoopbackServer) -> None:
    """``mcp_tool_use`` / ``mcp_tool_result`` are the server's; the text is ours, quietly."""
    reply = whole("anthropic", "mcp_whole.json")
    kinds = [b["type"] for b in reply.body["content"]]
    assert kinds == ["mcp_tool_use", "mcp_tool_result", "text"]
    response = await replay(ANTHROPIC, server, reply, stream=False)
    assert response.content == (Text(reply.body["content"][2]["text"]),)
    assert response.stop_reason is StopReason.END_TURN
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1250, 88)
    valid_anthropic(await send_back(ANTHROPIC, server, response), response)


async def test_responses_whole_with_a_hosted_search_item(
    server: LoopbackServer,
) -> None:
    reply = whole("openai_responses", "xai_x_search_whole.json")
    output = reply.body["output"]
    assert [o["type"] for o in output] == ["x_search_call", "message"]
    response = await replay(OPENAI_RESPONSES, server, reply, stream=False)
    assert response.text == "".join(c["text"] for c in output[1]["content"])
    assert response.tool_calls == ()
    assert response.stop_reason is StopReason.END_TURN
    valid_responses(await send_back(OPENAI_RESPONSES, server, response), response)


# -- derived from real Chat recordings: index gaps, missing indices ---------------------


def _renumber_calls(name: str, numbers: dict[int, int | None]) -> SseReply:
    """The real stream with its tool-call indices renumbered (None drops the field)."""
    out = []
    for event in sse("openai_chat", name).events:
        payload = event.removeprefix("data: ").strip()
        if payload != "[DONE]":
            chunk = json.loads(payload)
            for choice in chunk["choices"]:
                for call in choice["delta"].get("tool_calls") or ():
                    new = numbers[call["index"]]
                    if new is None:
                        del call["index"]
                    else:
                        call["index"] = new
            payload = json.dumps(chunk)
        out.append(f"data: {payload}\n\n")
    return SseReply("".join(out))


@pytest.mark.parametrize(
    "numbers",
    [{0: 1, 1: 3}, {0: 5, 1: 6}, {0: None, 1: None}],
    ids=["gaps", "offset", "no-index"],
)
async def test_chat_parallel_calls_with_renumbered_indices(
    server: LoopbackServer, numbers: dict[int, int | None]
) -> None:
    """Servers that skip indices, start above 0 or leave the index out (ids still differ)."""
    reply = _renumber_calls("parallel_tool_calls.sse", numbers)
    response = await replay(
        OPENAI_CHAT, server, reply, "GetWeatherArgs", "get_stock_price"
    )
    real = await replay(
        OPENAI_CHAT, server, sse("openai_chat", "parallel_tool_calls.sse")
    )
    assert response.tool_calls == real.tool_calls
    assert [c.id for c in response.tool_calls] == [
        "call_JMW1whyEaYG438VE1OIflxA2",
        "call_DNYTawLBoN8fj3KN6qU9N1Ou",
    ]
    assert all(c.raw_arguments is None and c.input for c in response.tool_calls)
    body = await send_back(
        OPENAI_CHAT, server, response, "GetWeatherArgs", "get_stock_price"
    )
    valid_chat(body, response)


@pytest.mark.parametrize(
    ("store", "sent"),
    [(False, ["rs_2"]), (True, ["rs_1", "rs_2"])],
)
def test_stateless_reasoning_goes_back_only_with_encrypted_content(
    store: bool, sent: list[str]
) -> None:
    """Stateless, an id alone names an item OpenAI never kept: the request would 404."""
    bare = Thinking("summary", provider_id="rs_1")  # asked without include=encrypted
    blocks = (
        bare,
        Text("a", provider_id="msg_a"),
        _rs(2),
        Text("b", provider_id="msg_b"),
    )
    items = responses_input(
        [Message("user", "go"), Message("assistant", blocks)], store=store
    )
    assert [i["id"] for i in items if i.get("type") == "reasoning"] == sent
    texts = [(i.get("id"), i["content"]) for i in items if i.get("role") == "assistant"]
    # a message goes with its id only after a reasoning item that is sent
    first = ("msg_a", [{"type": "output_text", "text": "a", "annotations": []}])
    assert texts[0] == (first if store else (None, "a"))
    assert texts[1] == (
        "msg_b",
        [{"type": "output_text", "text": "b", "annotations": []}],
    )
