"""Unique tool-call ids on the way to a provider, whatever the model wrote.

Anthropic rejects a request whose ``tool_use`` ids repeat; OpenAI pairs every
result with the one call of its id. Models repeat ids anyway: two calls with
one id in a response, and local OpenAI-compatible servers that send ``call_0``
in every response. The transcript keeps the ids as written (the store holds
the originals); this module renames the repeats in the *request* only.

Providers also constrain how an id is spelled, and a session can meet several
providers (a fallback model, a session resumed with another model, ids from a
local server): Anthropic accepts only ``[A-Za-z0-9_-]+`` (Kimi-style
``functions.read:0`` is refused), Chat Completions at most 40 characters (a
Responses ``fc_…`` id is longer). A converter passes its provider's
`IdSpelling`; an id outside it is respelled on the wire like a repeat, and the
result of its call follows.

The repair is deterministic and append-stable: a request is walked in order,
an id already used earlier in it gets the first free ``<id>_<n>`` (n = 2, 3 …),
and each tool result takes the repaired id of the call it answers — the next
unanswered call of that id in the assistant message right before it. The same
history always yields the same wire ids, and appending messages never changes
the ids of earlier ones, so provider prompt caches stay valid.
"""

from __future__ import annotations

import dataclasses
import re
from collections import deque
from collections.abc import Sequence
from typing import Any

from ..messages import Message, ToolCall, ToolResult

__all__ = ["ANTHROPIC_IDS", "CHAT_IDS", "IdSpelling", "unique_call_ids"]

_EMPTY_BASE = "call"


@dataclasses.dataclass(frozen=True, slots=True)
class IdSpelling:
    """How a provider lets a tool-call id be spelled."""

    invalid: re.Pattern[str] | None = None
    """Characters the provider refuses (each becomes ``_``); None = any."""
    max_len: int | None = None
    """Longest id the provider accepts; None = no limit."""

    def spell(self, call_id: str) -> str:
        """`call_id` as this provider accepts it ("" stays "": it is filled later)."""
        if not call_id:
            return ""
        if self.invalid is not None:
            call_id = self.invalid.sub("_", call_id)
        if self.max_len is not None:
            call_id = call_id[: self.max_len]
        return call_id


ANY_IDS = IdSpelling()
ANTHROPIC_IDS = IdSpelling(invalid=re.compile(r"[^A-Za-z0-9_-]"))
"""Anthropic: ``tool_use.id`` must match ``^[a-zA-Z0-9_-]+$``."""
CHAT_IDS = IdSpelling(max_len=40)
"""Chat Completions: ``tool_calls[].id`` is at most 40 characters."""


def unique_call_ids(
    messages: Sequence[Message], spelling: IdSpelling = ANY_IDS
) -> Sequence[Message]:
    """`messages` with every tool-call id unique and spelled as `spelling` allows.

    Returns `messages` itself when every id is fine (the common case costs one
    pass and no copies). Results whose id names no call of the preceding
    assistant message are left as they are.
    """
    seen: set[str] = set()
    repair = False
    for message in messages:
        if message.role == "assistant" and not isinstance(message.content, str):
            for call in message.tool_calls:
                if not call.id or call.id in seen or spelling.spell(call.id) != call.id:
                    repair = True
                    break
                seen.add(call.id)
        if repair:
            break
    if not repair:
        return messages
    return _repaired(messages, spelling)


def _repaired(messages: Sequence[Message], spelling: IdSpelling) -> list[Message]:
    used = _Used()
    out: list[Message] = []
    pending: dict[str, deque[str]] = {}
    for message in messages:
        if isinstance(message.content, str):
            out.append(message)
            pending = {}
        elif message.role == "assistant":
            repaired, pending = _assistant(message.content, used, spelling)
            out.append(repaired)
        else:
            out.append(_user(message.content, pending))
            pending = {}
    return out


def _assistant(
    content: Sequence[object], used: _Used, spelling: IdSpelling
) -> tuple[Message, dict[str, deque[str]]]:
    """The message with repeated ids renamed, and original id → wire ids in order."""
    pending: dict[str, deque[str]] = {}
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, ToolCall):
            wire = _fresh(block.id, used, spelling)
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


class _Used:
    """Wire ids taken so far in the request, and where each base's suffix search resumes.

    Every suffix below a base's resume point was taken when it was tried, and
    ids are never released, so resuming there finds the same first free suffix
    as counting from 2 — without re-walking them (``call_0`` in every one of N
    turns would otherwise cost N² per request).
    """

    __slots__ = ("ids", "next_suffix")

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.next_suffix: dict[str, int] = {}


def _fresh(call_id: str, used: _Used, spelling: IdSpelling) -> str:
    """`call_id` (as spelled) if unused, else the first free ``<id>_<n>``; marks it used."""
    spelled = spelling.spell(call_id)
    if spelled and spelled not in used.ids:
        used.ids.add(spelled)
        return spelled
    base = spelled or _EMPTY_BASE
    n = used.next_suffix.get(spelled, 2 if spelled else 1)  # "" = the empty ids
    while (wire := _suffixed(base, n, spelling.max_len)) in used.ids:
        n += 1
    used.ids.add(wire)
    used.next_suffix[spelled] = n + 1
    return wire


def _suffixed(base: str, n: int, max_len: int | None) -> str:
    suffix = f"_{n}"
    if max_len is not None:
        base = base[: max(0, max_len - len(suffix))]
    return f"{base}{suffix}"
