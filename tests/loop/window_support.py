"""Provider streams with chosen usage, for the context-window tests (official SDKs, loopback).

Each builder returns the SSE text the real API sends: Anthropic Messages
(``message_start`` carries the input usage) or OpenAI Chat Completions (the
last chunk carries ``usage``, as with ``stream_options.include_usage``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import JsonReply, LoopbackServer, SseReply

from toolweave.models import AnthropicModel, Model, OpenAIChatModel

__all__ = [
    "PROVIDERS",
    "JsonReply",
    "LoopbackServer",
    "SseReply",
    "calls_reply",
    "model_for",
    "text_reply",
    "too_long_reply",
]

PROVIDERS = ("anthropic", "openai_chat")

KOREAN = (
    "병렬 도구 실행은 모델이 한 번의 응답에서 여러 도구 호출을 반환할 때"
    " 안전하게 동시에 실행할 수 있는 호출만 겹쳐서 실행하고,"
    " 나머지는 순서대로 실행하며, 기록은 직렬 실행과 똑같이 남긴다. "
)
"""Real Korean prose (a sentence of the project's own seed documents' kind)."""


def _sse(event: str | None, data: object) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n"


def model_for(provider: str, url: str, *, window: int | None, name: str = "") -> Model:
    """The provider's official-SDK model against the loopback server."""
    if provider == "anthropic":
        return AnthropicModel(
            name or "claude-sonnet-4-6",
            api_key="test-key",
            base_url=url,
            context_window=window,
        )
    return OpenAIChatModel(
        name or "gpt-4.1",
        api_key="test-key",
        base_url=url + "/v1",
        context_window=window,
    )


def _anthropic(blocks: Sequence[dict[str, Any]], stop: str, input_tokens: int) -> str:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_window",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        },
    }
    out = [_sse("message_start", start)]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            head = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            head = {
                "type": "tool_use",
                "id": block["id"],
                "name": block["name"],
                "input": {},
            }
            delta = {
                "type": "input_json_delta",
                "partial_json": json.dumps(block["input"]),
            }
        out.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        out.append(
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
        out.append(
            _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        )
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
    return _sse(
        None,
        {
            "id": "chatcmpl-window",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-4.1-2025-04-14",
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            ]
            if usage is None
            else [],
            "usage": usage,
        },
    )


def _chat(blocks: Sequence[dict[str, Any]], finish: str, input_tokens: int) -> str:
    out = [_chunk({"role": "assistant", "content": ""})]
    index = 0
    for block in blocks:
        if block["type"] == "text":
            out.append(_chunk({"content": block["text"]}))
            continue
        head = {
            "index": index,
            "id": block["id"],
            "type": "function",
            "function": {
                "name": block["name"],
                "arguments": json.dumps(block["input"]),
            },
        }
        out.append(_chunk({"tool_calls": [head]}))
        index += 1
    out.append(_chunk({}, finish=finish))
    usage = {
        "prompt_tokens": input_tokens,
        "completion_tokens": 20,
        "total_tokens": input_tokens + 20,
    }
    out.append(_chunk({}, usage=usage))
    out.append("data: [DONE]\n\n")
    return "".join(out)


def text_reply(
    provider: str, text: str, *, input_tokens: int = 50, stop: str | None = None
) -> SseReply:
    """A text-only answer whose request the provider counted as `input_tokens`.

    `stop` is the provider's own stop reason (default ``end_turn`` / ``stop``).
    """
    blocks = [{"type": "text", "text": text}]
    if provider == "anthropic":
        return SseReply(_anthropic(blocks, stop or "end_turn", input_tokens))
    return SseReply(_chat(blocks, stop or "stop", input_tokens))


def calls_reply(
    provider: str,
    calls: Sequence[tuple[str, str, dict[str, Any]]],
    *,
    input_tokens: int = 50,
) -> SseReply:
    """A response of tool calls (id, name, input)."""
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    if provider == "anthropic":
        return SseReply(_anthropic(blocks, "tool_use", input_tokens))
    return SseReply(_chat(blocks, "tool_calls", input_tokens))


def too_long_reply(provider: str, requested: int, window: int) -> JsonReply:
    """The provider's 400 for a prompt over the window, in its own words."""
    if provider == "anthropic":
        return JsonReply(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"prompt is too long: {requested} tokens > {window} maximum",
                },
            },
        )
    return JsonReply(
        400,
        {
            "error": {
                "message": f"This model's maximum context length is {window} tokens."
                f" However, your messages resulted in {requested} tokens. Please reduce"
                " the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    )


def tool_result_texts(body: Any, provider: str) -> list[str]:
    """The text of every tool result in a request body, in order."""
    texts: list[str] = []
    for message in body["messages"]:
        if provider == "anthropic":
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_result":
                        inner = block.get("content")
                        if isinstance(inner, list):
                            inner = "".join(b.get("text", "") for b in inner)
                        texts.append(inner or "")
        elif message.get("role") == "tool":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(b.get("text", "") for b in content)
            texts.append(content or "")
    return texts
