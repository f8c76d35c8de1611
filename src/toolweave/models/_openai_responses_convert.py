"""Neutral request -> OpenAI Responses API parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import BadRequestError
from ..messages import Image, Message, Text, Thinking, ToolCall, ToolResult
from ._base import ModelRequest
from ._openai_chat_convert import ERROR_PREFIX, image_url
from ._repair import dump_arguments
from ._wire_ids import unique_call_ids

__all__ = ["responses_input", "responses_params"]


def responses_params(
    request: ModelRequest,
    *,
    model: str,
    send_flag: bool,
    reasoning: Mapping[str, Any] | None = None,
    include_encrypted_reasoning: bool = False,
    store: bool = False,
) -> dict[str, Any]:
    """Keyword arguments for ``client.responses.create(stream=True, **params)``.

    Stateless by default (``store=False``): the whole conversation is sent
    each time, reasoning items included with their encrypted content.
    Stop sequences are not part of the Responses API and are not sent.
    """
    params: dict[str, Any] = {
        "model": model,
        "input": responses_input(request.messages, store=store),
        "max_output_tokens": request.max_tokens,
        "store": store,
    }
    if request.system:
        params["instructions"] = request.system
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.metadata:
        params["metadata"] = dict(request.metadata)
    if reasoning is not None:
        params["reasoning"] = dict(reasoning)
    if include_encrypted_reasoning:
        params["include"] = ["reasoning.encrypted_content"]
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.input_schema),
                "strict": False,
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
    return {"type": "function", "name": choice}


def responses_input(
    messages: Sequence[Message], *, store: bool = False
) -> list[dict[str, Any]]:
    """The conversation as Responses input items.

    Tool results become ``function_call_output`` items keyed by ``call_id``;
    reasoning items go back with their id and encrypted content (reasoning
    from another provider has neither and is dropped). Without `store`, a
    reasoning item without encrypted content is dropped too: OpenAI would look
    its id up in a store that never kept it and reject the request ("Item with
    id 'rs_…' not found. Items are not persisted when `store` is set to false").
    """
    items: list[dict[str, Any]] = []
    for message in unique_call_ids(messages):
        if isinstance(message.content, str):
            items.append({"role": message.role, "content": message.content})
        elif message.role == "assistant":
            items.extend(_assistant(message, store=store))
        else:
            items.extend(_user(message))
    return items


def _assistant(message: Message, *, store: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, Text):
            if block.text:
                items.append({"role": "assistant", "content": block.text})
        elif isinstance(block, Thinking):
            if block.provider_id is not None and (
                store or block.encrypted_content is not None
            ):
                items.append(_reasoning(block))
        elif isinstance(block, ToolCall):
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": dump_arguments(block),
                }
            )
    return _followed_reasoning(items)


def _followed_reasoning(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`items` without the reasoning items whose following item is not among them.

    The API rejects a reasoning item sent without the item it produced ("was
    provided without its required following item"). The transcript keeps only
    messages and function calls, so a reasoning item that led to a hosted
    tool's item (web search, file search, ...) arrives next to another
    reasoning item or last; such an item is dropped (the model loses that
    reasoning, not the request). The provider never emits two reasoning items
    in a row, so adjacency is exact.
    """
    kept: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if item.get("type") == "reasoning":
            following = items[index + 1] if index + 1 < len(items) else None
            if following is None or following.get("type") == "reasoning":
                continue
        kept.append(item)
    return kept


def _reasoning(block: Thinking) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": block.provider_id,
        "summary": [{"type": "summary_text", "text": block.text}] if block.text else [],
    }
    if block.encrypted_content is not None:
        item["encrypted_content"] = block.encrypted_content
    return item


def _user(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, ToolResult):
            items.append(_function_output(block))
        elif isinstance(block, Text):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, Image):
            parts.append({"type": "input_image", "image_url": image_url(block)})
        elif not isinstance(block, Thinking | ToolCall):
            raise BadRequestError(f"not a content block: {block!r}")
    if parts:
        items.append({"role": "user", "content": parts})
    return items


def _function_output(result: ToolResult) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    prefix = ERROR_PREFIX if result.is_error else ""
    if isinstance(result.content, str):
        output = prefix + result.content
    else:
        output = [
            {"type": "input_image", "image_url": image_url(b)}
            if isinstance(b, Image)
            else {"type": "input_text", "text": b.text}
            for b in result.content
        ]
        if prefix:
            output.insert(0, {"type": "input_text", "text": prefix.strip()})
    return {"type": "function_call_output", "call_id": result.call_id, "output": output}
