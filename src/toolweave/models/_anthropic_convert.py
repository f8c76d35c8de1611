"""Neutral request -> Anthropic Messages API parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import BadRequestError
from ..messages import Image, Message, Text, Thinking, ToolCall, ToolResult
from ._base import ModelRequest
from ._wire_ids import ANTHROPIC_IDS, unique_call_ids

__all__ = ["anthropic_messages", "anthropic_params"]


def anthropic_params(
    request: ModelRequest,
    *,
    model: str,
    send_flag: bool,
    thinking: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``client.messages.create(stream=True, **params)``.

    The parallel flag travels as ``tool_choice.disable_parallel_tool_use`` and
    only when tools are sent, `send_flag` is set and the request forbids
    parallel calls (Anthropic's default is to allow them). `metadata` keeps
    only ``user_id``, the one key the API accepts. The current Messages API
    takes no ``temperature``; it is not sent.
    """
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": anthropic_messages(request.messages),
    }
    if request.system:
        params["system"] = request.system
    if request.stop_sequences:
        params["stop_sequences"] = list(request.stop_sequences)
    if "user_id" in request.metadata:
        params["metadata"] = {"user_id": request.metadata["user_id"]}
    if thinking is not None:
        params["thinking"] = dict(thinking)
    if request.tools:
        params["tools"] = [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": dict(t.input_schema),
            }
            for t in request.tools
        ]
        choice = _tool_choice(request, send_flag)
        if choice is not None:
            params["tool_choice"] = choice
    return params


def _tool_choice(request: ModelRequest, send_flag: bool) -> dict[str, Any] | None:
    choice: dict[str, Any]
    if request.tool_choice in ("auto", "any", "none"):
        choice = {"type": request.tool_choice}
    else:
        choice = {"type": "tool", "name": request.tool_choice}
    if send_flag and not request.parallel_tool_calls and choice["type"] != "none":
        choice["disable_parallel_tool_use"] = True
    if choice == {"type": "auto"}:
        return None  # the API default; sending nothing keeps the request minimal
    return choice


def anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as Anthropic message params.

    Thinking blocks go back only if Anthropic signed them (or they are
    redacted); reasoning from another provider cannot be verified and is
    dropped. Empty text blocks, which the API rejects, are dropped.
    """
    out: list[dict[str, Any]] = []
    for message in unique_call_ids(messages, ANTHROPIC_IDS):
        if isinstance(message.content, str):
            out.append({"role": message.role, "content": message.content})
            continue
        blocks = [
            b for b in (_block(block) for block in message.content) if b is not None
        ]
        out.append({"role": message.role, "content": blocks})
    return out


def _block(block: object) -> dict[str, Any] | None:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, Image):
        return _image(block)
    if isinstance(block, Thinking):
        if block.redacted_data is not None:
            return {"type": "redacted_thinking", "data": block.redacted_data}
        if block.signature is None:
            return None
        return {
            "type": "thinking",
            "thinking": block.text,
            "signature": block.signature,
        }
    if isinstance(block, ToolCall):
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": dict(block.input),
        }
    if isinstance(block, ToolResult):
        return _tool_result(block)
    raise BadRequestError(f"not a content block: {block!r}")


def _image(image: Image) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": image.media_type,
            "data": image.data,
        },
    }


def _tool_result(result: ToolResult) -> dict[str, Any]:
    content: str | list[dict[str, Any]]
    if isinstance(result.content, str):
        content = result.content
    else:
        content = [
            _image(b) if isinstance(b, Image) else {"type": "text", "text": b.text}
            for b in result.content
        ]
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "content": content,
    }
    if result.is_error:
        block["is_error"] = True
    return block
