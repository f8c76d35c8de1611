"""Neutral request -> OpenAI Responses API parameters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

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

    Item ids pair with the reasoning they followed (see `_assistant`). Call
    ids may be respelled on the wire (`unique_call_ids`); item ids are not
    call ids and go back exactly as the provider gave them.
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


_ITEM_PREFIXES: Final = {"function_call": "fc_", "message": "msg_"}
"""The prefix the API requires of each kind's item id ("Expected an ID that begins with 'fc'")."""


def _assistant(message: Message, *, store: bool) -> list[dict[str, Any]]:
    """One assistant turn as items, every reasoning item paired with what followed it.

    The API ties a reasoning item to the items the model produced after it,
    by item id, both ways: a reasoning item sent without the item that
    followed it is rejected ("was provided without its required following
    item"), and so is a ``function_call`` or message sent with its id but
    without its reasoning item ("was provided without its required
    'reasoning' item"). So:

    - A reasoning item is sent only when it can be (`_sendable`) and the next
      block of the turn that becomes an item is a message or a call with an
      item id the API accepts (see `_followed_reasoning`'s rule); a reasoning
      block that cannot be sent leaves the items after it unpaired.
    - Every message and call after a sent reasoning item, up to the next
      reasoning block, carries its own item id: the first one is the item the
      reasoning is paired with, and the later ones (parallel calls, text then
      calls) name the same reasoning item, which is there. This is the rule
      pydantic-ai and the OpenAI Agents SDK follow: send the turn's item ids
      when its reasoning goes back.
    - An item id is sent only with the prefix the API requires of its kind
      (``fc_``, ``msg_``): a ``call_…`` id, another provider's id or a
      gateway's made-up one is never sent as an item id, and a missing id
      sends none. Anything else goes without an id: text as a plain
      assistant message, a call with only its ``call_id``.
    """
    items: list[dict[str, Any]] = []
    waiting: dict[str, Any] | None = None  # a sendable reasoning item, not yet followed
    paired = False  # the items from here on follow a reasoning item that is sent
    for block in message.blocks:
        if isinstance(block, Thinking):
            # A reasoning item still waiting was followed by another reasoning
            # item (or one that cannot go back): nothing it produced is here.
            waiting = _reasoning(block) if _sendable(block, store=store) else None
            paired = False
            continue
        if not isinstance(block, Text | ToolCall):
            continue
        item = _output_item(block)
        if item is None:
            continue
        if waiting is not None:
            # Paired by id or not at all: a reasoning item whose follower has no
            # id the API accepts (a session stored before ids were kept, a
            # gateway that omits them) would be refused with the whole request.
            # It is left out: the model loses that reasoning, not the turn.
            if _valid_item_id(block.provider_id, _kind(block)):
                items.append(waiting)
                paired = True
            waiting = None
        if paired:
            item = _with_item_id(item, block)
        items.append(item)
    return _followed_reasoning(items)


def _sendable(block: Thinking, *, store: bool) -> bool:
    """Can this reasoning block go back at all (an OpenAI item OpenAI can read)?"""
    return block.provider_id is not None and (
        store or block.encrypted_content is not None
    )


def _output_item(block: Text | ToolCall) -> dict[str, Any] | None:
    """A text or call block as an item without its item id (None: not sent)."""
    if isinstance(block, ToolCall):
        return {
            "type": "function_call",
            "call_id": block.id,
            "name": block.name,
            "arguments": dump_arguments(block),
        }
    if not block.text:  # an empty text was no item (providers reject them)
        return None
    return {"role": "assistant", "content": block.text}


def _kind(block: Text | ToolCall) -> str:
    return "function_call" if isinstance(block, ToolCall) else "message"


def _with_item_id(item: dict[str, Any], block: Text | ToolCall) -> dict[str, Any]:
    """`item` carrying the block's provider item id, if it has one the API accepts.

    A message with an id takes the output-message form (``type: message``,
    ``output_text`` parts): the short ``{"role", "content"}`` form has no id.
    """
    if isinstance(block, ToolCall):
        if _valid_item_id(block.provider_id, "function_call"):
            return {**item, "id": block.provider_id}
        return item
    if not _valid_item_id(block.provider_id, "message"):
        return item
    return {
        "type": "message",
        "role": "assistant",
        "id": block.provider_id,
        "status": "completed",
        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
    }


def _valid_item_id(item_id: str | None, kind: str) -> bool:
    return item_id is not None and item_id.startswith(_ITEM_PREFIXES[kind])


def _followed_reasoning(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`items` without the reasoning items whose following item is not among them.

    The API rejects a reasoning item sent without the item it produced ("was
    provided without its required following item"). The transcript keeps only
    messages and function calls, so a reasoning item that led to a hosted
    tool's item (web search, file search, ...) arrives next to another
    reasoning item or last; such an item is dropped (the model loses that
    reasoning, not the request). `_assistant` only places a reasoning item
    right before the item that followed it, so this is a guard: a reasoning
    item here is always followed.
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
