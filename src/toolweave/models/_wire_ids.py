"""Unique tool-call ids on the way to a provider, whatever the model wrote.

Anthropic rejects a request whose ``tool_use`` ids repeat; OpenAI pairs every
result with the one call of its id. Models repeat ids anyway: two calls with
one id in a response, and local OpenAI-compatible servers that send ``call_0``
in every response. The transcript keeps the ids as written (the store holds
the originals); this module renames the repeats in the *request* only.

The repair is deterministic and append-stable: a request is walked in order,
an id already used earlier in it gets the first free ``<id>_<n>`` (n = 2, 3 …),
and each tool result takes the repaired id of the call it answers — the next
unanswered call of that id in the assistant message right before it. The same
history always yields the same wire ids, and appending messages never changes
the ids of earlier ones, so provider prompt caches stay valid.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import Any

from ..messages import Message, ToolCall, ToolResult

__all__ = ["unique_call_ids"]

_EMPTY_BASE = "call"


def unique_call_ids(messages: Sequence[Message]) -> Sequence[Message]:
    """`messages` with every tool-call id unique across the request.

    Returns `messages` itself when no id repeats (the common case costs one pass
    and no copies). Results whose id names no call of the preceding assistant
    message are left as they are.
    """
    seen: set[str] = set()
    repeated = False
    for message in messages:
        if message.role == "assistant" and not isinstance(message.content, str):
            for call in message.tool_calls:
                if not call.id or call.id in seen:
                    repeated = True
                    break
                seen.add(call.id)
        if repeated:
            break
    if not repeated:
        return messages
    return _repaired(messages)


def _repaired(messages: Sequence[Message]) -> list[Message]:
    used: set[str] = set()
    out: list[Message] = []
    pending: dict[str, deque[str]] = {}
    for message in messages:
        if isinstance(message.content, str):
            out.append(message)
            pending = {}
        elif message.role == "assistant":
            repaired, pending = _assistant(message.content, used)
            out.append(repaired)
        else:
            out.append(_user(message.content, pending))
            pending = {}
    return out


def _assistant(
    content: Sequence[object], used: set[str]
) -> tuple[Message, dict[str, deque[str]]]:
    """The message with repeated ids renamed, and original id → wire ids in order."""
    pending: dict[str, deque[str]] = {}
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, ToolCall):
            wire = _fresh(block.id, used)
            pending.setdefault(block.id, deque()).append(wire)
            if wire != block.id:
                block = dataclasses.replace(block, id=wire)
        blocks.append(block)
    return Message("assistant", tuple(blocks)), pending


def _user(content: Sequence[object], pending: dict[str, deque[str]]) -> Message:
    """The message with each result renamed like the next call of its id."""
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, ToolResult):
            queue = pending.get(block.call_id)
            if queue:
                wire = queue.popleft()
                if wire != block.call_id:
                    block = dataclasses.replace(block, call_id=wire)
        blocks.append(block)
    return Message("user", tuple(blocks))


def _fresh(call_id: str, used: set[str]) -> str:
    """`call_id` if unused, else the first free ``<call_id>_<n>``; marks it used."""
    if call_id and call_id not in used:
        used.add(call_id)
        return call_id
    base = call_id or _EMPTY_BASE
    n = 2 if call_id else 1
    while f"{base}_{n}" in used:
        n += 1
    wire = f"{base}_{n}"
    used.add(wire)
    return wire
