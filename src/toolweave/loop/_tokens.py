"""A script-aware token estimate for text the provider has not counted yet.

Characters ÷ 4 holds for English prose only. Tokenizers of every major
provider spend about one token per Hangul syllable, Han character or kana
(Korean tool output estimated at ÷ 4 came out at a third of the real count),
and split code and JSON at nearly every punctuation mark. The estimate here
counts each kind of text at its own rate, with regular expressions (C speed,
O(length)):

| text | tokens |
|---|---|
| CJK: Hangul, Han, kana, full-width forms | 1 per character |
| a run of ASCII letters (a word, an identifier) | 0.7 + 0.1 per letter |
| digits | 1 per 2.5 |
| ASCII punctuation (``{":,}`` …) | 0.6 per character |
| a newline; a run of two or more spaces or tabs (indentation) | 1 each |
| other characters of the Basic Multilingual Plane (Cyrillic, accents, Thai …) | 0.6 per character |
| characters beyond it (emoji, rare Han) | 2 per character |

The rates lean high: the estimate guards a window, and an overestimate
costs an early compaction while an underestimate costs a refused request.
The run's `Conversation` uses it only for what was added since the
provider last reported its own count (`ContextGuard`), and scales it up when
the provider counted more than estimated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import final

from ..messages import Image, Message, Text, Thinking, ToolCall, ToolResult
from ..models import ToolDefinition

__all__ = [
    "IMAGE_TOKENS",
    "OVERHEAD_PER_BLOCK",
    "DefinitionsEstimate",
    "block_tokens",
    "definitions_tokens",
    "message_tokens",
    "messages_tokens",
    "text_tokens",
    "value_tokens",
]

IMAGE_TOKENS = 1_600
"""A flat guess per image (a 1,000 by 1,000 pixel image costs about this on Anthropic)."""

_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u31ff"
    "\u3200-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\ufe30-\ufe4f\uff00-\uffef]+"
)
_WORD = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"[0-9]+")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]+")
_INDENT = re.compile(r"[ \t]{2,}")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]+")
_OTHER = re.compile(r"[^\x00-\x7f]+")

OVERHEAD_PER_BLOCK = 4
"""Role markers, block framing and ids the wire adds around each block."""


def _chars(pattern: re.Pattern[str], text: str) -> tuple[int, int]:
    """(characters matched, runs matched)."""
    runs = pattern.findall(text)
    return sum(map(len, runs)), len(runs)


def text_tokens(text: str) -> int:
    """Estimated tokens of `text` (see the module's table). O(len(text))."""
    if not text:
        return 0
    if text.isascii():
        cjk = astral = other = 0
    else:
        cjk, _ = _chars(_CJK, text)
        astral, _ = _chars(_ASTRAL, text)
        other = _chars(_OTHER, text)[0] - cjk - astral
    letters, words = _chars(_WORD, text)
    digits, _ = _chars(_DIGITS, text)
    punct, _ = _chars(_PUNCT, text)
    spaces = text.count("\n") + len(_INDENT.findall(text))
    estimate = (
        cjk
        + 2 * astral
        + 0.6 * other
        + 0.7 * words
        + 0.1 * letters
        + digits / 2.5
        + 0.6 * punct
        + spaces
    )
    return max(1, round(estimate))


def value_tokens(value: object) -> int:
    """Estimated tokens of a JSON value as the wire carries it (tool inputs, schemas)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text_tokens(text)


def block_tokens(block: object) -> int:
    """Estimated tokens of one content block, its framing included."""
    if isinstance(block, Text | Thinking):
        return text_tokens(block.text) + OVERHEAD_PER_BLOCK
    if isinstance(block, ToolCall):
        arguments: object = (
            block.raw_arguments if block.raw_arguments is not None else block.input
        )
        inner = (
            text_tokens(arguments)
            if isinstance(arguments, str)
            else value_tokens(
                dict(arguments) if isinstance(arguments, Mapping) else arguments
            )
        )
        return (
            inner + text_tokens(block.name) + text_tokens(block.id) + OVERHEAD_PER_BLOCK
        )
    if isinstance(block, ToolResult):
        content = block.content
        if isinstance(content, str):
            inner = text_tokens(content)
        else:
            inner = sum(block_tokens(b) for b in content)
        return inner + text_tokens(block.call_id) + OVERHEAD_PER_BLOCK
    if isinstance(block, Image):
        return IMAGE_TOKENS
    return OVERHEAD_PER_BLOCK


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message."""
    if isinstance(message.content, str):
        return text_tokens(message.content) + OVERHEAD_PER_BLOCK
    return sum(block_tokens(b) for b in message.content) + OVERHEAD_PER_BLOCK


def messages_tokens(messages: Iterable[Message], system: str | None = None) -> int:
    """Estimated tokens of a transcript and its system prompt."""
    return text_tokens(system or "") + sum(message_tokens(m) for m in messages)


def definitions_tokens(definitions: Iterable[ToolDefinition]) -> int:
    """Estimated tokens of tool definitions as the wire carries them."""
    return sum(
        text_tokens(d.name) + text_tokens(d.description) + value_tokens(d.input_schema)
        for d in definitions
    )


@final
class DefinitionsEstimate:
    """The estimate of a tool set's definitions, kept while the set is unchanged.

    An Agent builds its tool definitions afresh for every run (a schema is a
    copy its provider may change), so the estimate is keyed by their content:
    definitions equal to the last ones (names, descriptions, schemas) reuse its
    figure; any other set (a tool registered, removed, re-described) is
    estimated anew. Comparing costs far less than estimating (no JSON, no
    regular expressions). Event-loop thread only.
    """

    def __init__(self) -> None:
        self._definitions: tuple[ToolDefinition, ...] | None = None
        self._tokens = 0

    def tokens(self, definitions: Sequence[ToolDefinition]) -> int:
        """Estimated tokens of `definitions` (see `definitions_tokens`)."""
        key = tuple(definitions)
        if key != self._definitions:
            self._tokens = definitions_tokens(key)
            self._definitions = key
        return self._tokens
