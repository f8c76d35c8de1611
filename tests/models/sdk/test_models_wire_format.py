"""Neutral messages -> each provider's wire format, as the loopback server received it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from models_loopback import LoopbackServer, fixture
from models_sdk_cases import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, Case

from toolweave.events import Warning as WarningEvent
from toolweave.messages import Image, Message, Text, Thinking, ToolCall, ToolResult
from toolweave.models import ModelRequest, ToolDefinition

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

PNG = "iVBORw0KGgo="
SIGNED = Thinking("Two reads.", "sig-1")
CONVERSATION = ModelRequest(
    [
        Message("user", (Text("Look at this"), Image(PNG, "image/png"))),
        Message(
            "assistant",
            (
                SIGNED,
                Text("Reading."),
                ToolCall("call_1", "read", {"path": "a.py"}),
                ToolCall("call_2", "read", {}, raw_arguments="{bad"),
            ),
        ),
        Message(
            "user",
            (
                ToolResult("call_1", "print('a')"),
                ToolResult("call_2", "arguments were not valid JSON", is_error=True),
                Text("Go on."),
            ),
        ),
    ],
    system="You are terse.",
    tools=(
        ToolDefinition("read", "Read a file", {"type": "object", "properties": {}}),
    ),
    tool_choice="any",
    max_tokens=321,
    temperature=0.5,
    stop_sequences=("END",),
    metadata={"user_id": "u-42"},
)


async def sent(
    case: Case, server: LoopbackServer, request: ModelRequest, **options: Any
) -> dict[str, Any]:
    server.script(fixture(case.fixtures, "text"))
    async with case.open(server, **options) as model:
        await model.complete(request)
    body = server.requests[-1].body
    assert isinstance(body, dict)
    return body


async def test_anthropic_wire(server: LoopbackServer) -> None:
    warnings: list[WarningEvent] = []
    body = await sent(ANTHROPIC, server, CONVERSATION, on_warning=warnings.append)
    assert body["system"] == "You are terse."
    assert body["max_tokens"] == 321
    assert "temperature" not in body  # the Messages API no longer takes it
    assert ["temperature" in w.message for w in warnings] == [True]
    assert body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u-42"}
    assert body["tool_choice"] == {"type": "any"}  # parallel allowed: the API default
    user, assistant, results = body["messages"]
    assert user["content"] == [
        {"type": "text", "text": "Look at this"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
        },
    ]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Two reads.", "signature": "sig-1"},
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "call_2", "name": "read", "input": {}},
    ]
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "print('a')"},
        {
            "type": "tool_result",
            "tool_use_id": "call_2",
            "content": "arguments were not valid JSON",
            "is_error": True,
        },
        {"type": "text", "text": "Go on."},
    ]


async def test_openai_chat_wire(server: LoopbackServer) -> None:
    body = await sent(OPENAI_CHAT, server, CONVERSATION)
    assert body["max_completion_tokens"] == 321
    assert body["temperature"] == 0.5
    assert body["stop"] == ["END"]
    assert body["tool_choice"] == "required"
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "read"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look at this"},
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:image/png;base64,{PNG}"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": "{bad"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print('a')"},
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": "Error: arguments were not valid JSON",
        },
        {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    ]


async def test_openai_chat_tool_result_images_follow_in_a_user_message(
    server: LoopbackServer,
) -> None:
    request = ModelRequest(
        [
            Message("assistant", (ToolCall("call_1", "screenshot", {}),)),
            Message("user", (ToolResult("call_1", (Text("the page"), Image(PNG))),)),
        ]
    )
    body = await sent(OPENAI_CHAT, server, request)
    tool, user = body["messages"][1:]
    assert tool["role"] == "tool"
    assert tool["tool_call_id"] == "call_1"
    assert tool["content"].startswith("the page")
    assert user == {
        "role": "user",
        "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
        ],
    }


async def test_openai_compatible_server_gets_max_tokens(server: LoopbackServer) -> None:
    server.script(fixture("openai_chat", "text"))
    async with OPENAI_CHAT.open(server, "qwen2.5-coder", compatible=True) as model:
        await model.complete(ModelRequest([Message("user", "hi")], max_tokens=99))
    body = server.requests[0].body
    assert body["max_tokens"] == 99
    assert "max_completion_tokens" not in body


async def test_openai_responses_wire(server: LoopbackServer) -> None:
    reasoning = Thinking("Two reads.", provider_id="rs_9", encrypted_content="enc-9")
    messages = list(CONVERSATION.messages)
    assistant = messages[1]
    text, first, second = assistant.blocks[1:]
    assert isinstance(text, Text)
    assert isinstance(first, ToolCall) and isinstance(second, ToolCall)
    followers = (  # the item ids the response gave them: reasoning pairs by id
        dataclasses.replace(text, provider_id="msg_9"),
        dataclasses.replace(first, provider_id="fc_1"),
        dataclasses.replace(second, provider_id="fc_2"),
    )
    messages[1] = Message("assistant", (reasoning, *followers))
    request = ModelRequest(
        messages,
        system="You are terse.",
        tools=CONVERSATION.tools,
        max_tokens=321,
        metadata={"run": "r1"},
    )
    body = await sent(OPENAI_RESPONSES, server, request)
    assert body["instructions"] == "You are terse."
    assert body["max_output_tokens"] == 321
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["metadata"] == {"run": "r1"}
    assert body["tools"][0] == {
        "type": "function",
        "name": "read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look at this"},
                {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "Two reads."}],
            "encrypted_content": "enc-9",
        },
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_9",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read",
            "arguments": '{"path":"a.py"}',
            "id": "fc_1",
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "read",
            "arguments": "{bad",
            "id": "fc_2",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "print('a')"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": "Error: arguments were not valid JSON",
        },
        {"role": "user", "content": [{"type": "input_text", "text": "Go on."}]},
    ]


async def test_reasoning_from_another_provider_is_not_sent(
    server: LoopbackServer,
) -> None:
    """An Anthropic-signed block means nothing to OpenAI, and vice versa."""
    openai_reasoning = Thinking("x", provider_id="rs_1", encrypted_content="e")
    request = ModelRequest(
        [
            Message("user", "hi"),
            Message(
                "assistant",
                (SIGNED, openai_reasoning, Text("ok", provider_id="msg_1")),
            ),
            Message("user", "more"),
        ]
    )
    anthropic_body = await sent(ANTHROPIC, server, request)
    assert [b["type"] for b in anthropic_body["messages"][1]["content"]] == [
        "thinking",
        "text",
    ]
    responses_body = await sent(OPENAI_RESPONSES, server, request)
    kinds = [item.get("type", item.get("role")) for item in responses_body["input"]]
    assert kinds == ["user", "reasoning", "message", "user"]
    assert "sig-1" not in str(responses_body)


async def test_responses_warns_once_that_it_has_no_stop_sequences(
    server: LoopbackServer,
) -> None:
    warnings: list[WarningEvent] = []
    request = ModelRequest([Message("user", "hi")], stop_sequences=("END",))
    server.script(
        fixture("openai_responses", "text"), fixture("openai_responses", "text")
    )
    async with OPENAI_RESPONSES.open(server, on_warning=warnings.append) as model:
        await model.complete(request)
        await model.complete(request)
    assert all("stop" not in key for key in server.requests[0].body)
    assert len(warnings) == 1


SURROGATES = ModelRequest(
    [
        Message("user", "fix caf\udce9 please"),  # a non-UTF-8 prompt (surrogateescape)
        Message(
            "assistant",
            (
                Text("on it \ud83d"),
                ToolCall("call_1", "read", {"path": "caf\udce9.txt", "k\ud800": 1}),
            ),
        ),
        Message("user", (ToolResult("call_1", "no such file: caf\udce9.txt"),)),
    ],
    system="terse \udfff",
    tools=(
        ToolDefinition("read", "Read a file", {"type": "object", "properties": {}}),
    ),
)


@pytest.mark.parametrize(
    "case", [ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES], ids=lambda c: c.fixtures
)
async def test_lone_surrogates_reach_the_wire_as_replacement_characters(
    case: Case, server: LoopbackServer
) -> None:
    """Each SDK encodes the body as strict UTF-8: a lone surrogate would fail every
    later request of the run. It goes out as U+FFFD, the rest of the text intact."""
    body = await sent(case, server, SURROGATES)
    text = repr(body)
    assert "caf\ufffd" in text and "on it \ufffd" in text and "k\ufffd" in text
    assert "terse \ufffd" in text
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
