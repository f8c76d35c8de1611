"""Neutral request -> OpenAI Chat Completions parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from .._exceptions import BadRequestError
from ..messages import Image, Message, Text, Thinking, ToolCall, ToolResult
from ._base import ModelRequest
from ._repair import dump_arguments
from ._wire_ids import CHAT_IDS, unique_call_ids

__all__ = ["MaxTokensField", "chat_messages", "chat_params", "image_url"]

MaxTokensField: TypeAlias = Literal["max_completion_tokens", "max_tokens"]
"""Where the output cap goes: OpenAI's current field, or the older one most
OpenAI-compatible servers (vLLM, llama.cpp, Ollama) read."""

ERROR_PREFIX = "Error: "
"""Chat Completions has no is_error flag; a failed result's text says so instead."""


def chat_params(
    request: ModelRequest,
    *,
    model: str,
    send_flag: bool,
    max_tokens_field: MaxTokensField = "max_completion_tokens",
    include_usage: bool = True,
    empty_content: Literal[""] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``client.chat.completions.create(**params)``.

    ``parallel_tool_calls`` is sent only with tools and when `send_flag` says
    the model accepts it. Request metadata is not sent (the API stores it only
    with ``store=true``). `include_usage` asks a stream for its usage chunk
    (never set it for a whole request: OpenAI rejects ``stream_options``
    without ``stream``). `empty_content` is the content of an assistant turn
    that only called tools: OpenAI takes null, llama-cpp-python's server
    rejects null (HTTP 422/500 "Input should be a valid string") and takes "".
    """
    params: dict[str, Any] = {
        "model": model,
        "messages": chat_messages(
            request.system, request.messages, empty_content=empty_content
        ),
        max_tokens_field: request.max_tokens,
    }
    if include_usage:
        params["stream_options"] = {"include_usage": True}
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.stop_sequences:
        params["stop"] = list(request.stop_sequences)
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.input_schema),
                },
            }
            for t in request.tools
        ]
        params["tool_choice"] = _tool_choice(request.tool_choice)
        if send_flag:
            params["parallel_tool_calls"] = request.parallel_tool_calls
    return params


def _tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none"):
        return choice
    if choice == "any":
        return "required"
    return {"type": "function", "function": {"name": choice}}


def image_url(image: Image) -> str:
    """A data URL for `image`."""
    return f"data:{image.media_type};base64,{image.data}"


def chat_messages(
    system: str | None,
    messages: Sequence[Message],
    *,
    empty_content: Literal[""] | None = None,
) -> list[dict[str, Any]]:
    """The conversation as Chat Completions messages.

    Tool results become ``tool`` messages keyed by ``tool_call_id``, placed
    before the rest of their user turn (the API wants them right after the
    assistant's calls). Images inside a tool result, which a ``tool`` message
    cannot hold, follow in a user message. Thinking is not sent back: Chat
    Completions has no field for it.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in unique_call_ids(messages, CHAT_IDS):
        if isinstance(message.content, str):
            out.append({"role": message.role, "content": message.content})
        elif message.role == "assistant":
            out.append(_assistant(message, empty_content))
        else:
            out.extend(_user(message))
    return out


def _assistant(message: Message, empty_content: Literal[""] | None) -> dict[str, Any]:
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": dump_arguments(b)},
        }
        for b in message.blocks
        if isinstance(b, ToolCall)
    ]
    entry: dict[str, Any] = {
        "role": "assistant",
        "content": message.text or empty_content,
    }
    if calls:
        entry["tool_calls"] = calls
    return entry


def _user(message: Message) -> list[dict[str, Any]]:
    tool_messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, ToolResult):
            text, images = _result_text(block)
            tool_messages.append(
                {"role": "tool", "tool_call_id": block.call_id, "content": text}
            )
            parts.extend(
                {"type": "image_url", "image_url": {"url": image_url(i)}}
                for i in images
            )
        elif isinstance(block, Text):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, Image):
            parts.append({"type": "image_url", "image_url": {"url": image_url(block)}})
        elif not isinstance(block, Thinking | ToolCall):
            raise BadRequestError(f"not a content block: {block!r}")
    if parts:
        tool_messages.append({"role": "user", "content": parts})
    return tool_messages


def _result_text(result: ToolResult) -> tuple[str, list[Image]]:
    images = (
        []
        if isinstance(result.content, str)
        else [b for b in result.content if isinstance(b, Image)]
    )
    text = result.text
    if images:
        text += f"\n[{len(images)} image(s) follow in the next user message]"
    return (ERROR_PREFIX + text if result.is_error else text), images
