"""OpenAI Chat Completions chunks -> neutral chunks.

Tool-call deltas are assembled by index; a slot is flushed as `ToolUseReady`
when a higher index starts or the stream ends. A server that numbers every
call 0 but gives each its own id (seen from OpenAI-compatible servers) gets a
new slot per id. A delta for an index already flushed, without an id of its
own, would continue a call that was handed on (and may already be running)
with arguments it never sees: it is a stream that breaks the protocol, raised
as `ModelServerError` (the request is retried), never a second, nameless call.
Indexes need not be dense or ascending: a gap (0, then 7) is just two calls,
and calls come out in the order they started. Reasoning text that OpenAI-compatible servers send as
``reasoning_content`` / ``reasoning`` becomes reasoning chunks, as do the
``thinking`` parts of a ``content`` sent as a list of typed parts (Mistral's
Magistral). Of a stream with several choices (``n > 1``) only choice 0 is kept.

The legacy ``function_call`` field is a call only when the response has no
``tool_calls``: servers that fill both (llama-cpp-python does, with the first
call) describe one call twice, and running it twice would be a side effect
the model never asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, cast, final

from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import (
    ChoiceDeltaFunctionCall,
    ChoiceDeltaToolCall,
)

from .._exceptions import ModelConnectionError, ModelServerError
from ..messages import StopReason, Usage
from ._base import ReasoningChunk, StreamChunk, StreamEnd, TextChunk, ToolUseReady
from ._blocks import BlockNumbers
from ._repair import ToolCallBuilder
from ._tokens import token_count

__all__ = ["CHAT_STOP_REASONS", "ChatStreamMapper", "openai_usage"]

CHAT_STOP_REASONS: Final[dict[str, StopReason]] = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}
"""Chat finish reasons we know; others are UNKNOWN with the raw string kept."""

_REASONING_KEYS: Final = ("reasoning_content", "reasoning")
_NOTHING: Final[tuple[StreamChunk, ...]] = ()


@dataclass(slots=True)
class _Slot:
    key: int
    id: str | None = None
    name: str = ""
    parts: list[str] = field(default_factory=list)


@final
class ChatStreamMapper:
    """Maps the chunks of one Chat Completions stream. Not reusable, not thread-safe."""

    def __init__(self, tool_names: Iterable[str] = ()) -> None:
        self._blocks = BlockNumbers()
        self._calls = ToolCallBuilder(tool_names=tool_names)
        self._pending: dict[
            int, _Slot
        ] = {}  # provider index -> open slot, in start order
        self._slot_count = 0
        self._closed: set[int] = set()  # provider indexes already flushed
        self._run = 0  # text after a tool call starts a new text block
        self._text_run, self._text_number = -1, -1
        self._finish: str | None = None
        self._refused = False
        self._model: str | None = None
        self._usage = Usage(requests=1)
        self._legacy: _Slot | None = None  # the deprecated `function_call` field
        self._saw_tool_calls = False

    def feed(
        self, chunk: ChatCompletionChunk
    ) -> tuple[StreamChunk, ...] | list[StreamChunk]:
        """Chunks for one SDK chunk."""
        if not self._model:
            # Azure leads with a prompt-filter chunk whose id and model are blank.
            self._model = chunk.model or None
            self._calls.response_id = chunk.id or None
        if chunk.usage is not None:
            self._usage = _usage(chunk.usage)
        choice = _first_choice(chunk.choices or ())
        if choice is None:
            return _NOTHING
        delta = choice.delta
        if choice.finish_reason is not None:
            self._finish = choice.finish_reason
        content = delta.content
        if (
            delta.tool_calls is None
            and delta.refusal is None
            and delta.function_call is None
            and not delta.model_extra
            and (content is None or content.__class__ is str)
        ):
            if content:  # the hot path: plain text
                return (TextChunk(content, block=self._text_block()),)
            return _NOTHING
        return self._mixed(delta)

    def finish(self) -> list[StreamChunk]:
        """Remaining tool calls and the `StreamEnd`; raises if the stream was cut."""
        if self._finish is None:
            raise ModelConnectionError(
                "chat completions stream ended without a finish_reason"
            )
        out = self._flush(lambda index: True)
        if self._legacy is not None and not self._saw_tool_calls:
            out.extend(self._ready(self._legacy))
        stop = CHAT_STOP_REASONS.get(self._finish, StopReason.UNKNOWN)
        if self._refused and stop in (StopReason.END_TURN, StopReason.UNKNOWN):
            stop = StopReason.REFUSAL
        out.append(
            StreamEnd(
                stop, self._usage, raw_stop_reason=self._finish, model=self._model
            )
        )
        return out

    def _text_block(self) -> int:
        """The block of the current text run (cached: text deltas are the bulk)."""
        if self._text_run != self._run:
            self._text_run, self._text_number = (
                self._run,
                self._blocks.of(("text", self._run)),
            )
        return self._text_number

    def _mixed(self, delta: Any) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        extra = delta.model_extra or {}
        for key in _REASONING_KEYS:
            if isinstance(extra.get(key), str) and extra[key]:
                block = self._blocks.of(("reasoning", self._run))
                out.append(ReasoningChunk(extra[key], block=block))
        if isinstance(delta.content, list):
            out.extend(self._parts(delta.content))
        elif delta.content:
            out.append(TextChunk(delta.content, block=self._text_block()))
        if delta.refusal:
            self._refused = True
            out.append(TextChunk(delta.refusal, block=self._text_block()))
        if delta.function_call is not None:
            self._legacy_delta(delta.function_call)
        for call_delta in delta.tool_calls or ():
            self._saw_tool_calls = True
            out.extend(self._tool_delta(call_delta))
        return out

    def _parts(self, parts: list[Any]) -> list[StreamChunk]:
        """Typed content parts (Mistral's Magistral streams its reasoning this way).

        ``{"type": "text", "text": ...}`` is text; ``{"type": "thinking",
        "thinking": [{"type": "text", "text": ...}, ...]}`` is reasoning. Other
        part types carry nothing toolweave keeps and are skipped.
        """
        out: list[StreamChunk] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str) and part["text"]:
                out.append(TextChunk(part["text"], block=self._text_block()))
            elif kind == "thinking":
                inner = part.get("thinking")
                pieces = inner if isinstance(inner, list) else [{"text": inner}]
                text = "".join(
                    p["text"]
                    for p in pieces
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
                if text:
                    block = self._blocks.of(("reasoning", self._run))
                    out.append(ReasoningChunk(text, block=block))
        return out

    def _legacy_delta(self, delta: ChoiceDeltaFunctionCall) -> None:
        """Collect the legacy ``function_call``; it is emitted at the end, if alone."""
        if self._legacy is None:
            self._legacy = _Slot(-1)
        if delta.name and not self._legacy.name:
            self._legacy.name = delta.name
        if delta.arguments:
            self._legacy.parts.append(delta.arguments)

    def _tool_delta(self, delta: ChoiceDeltaToolCall) -> list[StreamChunk]:
        # Some servers omit the index; the SDK does not validate, so it may be None.
        given = cast("int | None", delta.index)
        index = given if given is not None else max(self._pending, default=0)
        out = self._flush(lambda pending: pending < index)
        slot = self._pending.get(index)
        if slot is not None and _is_new_call(slot, delta.id):
            out.extend(self._flush(lambda pending: True))
            slot = None
        if slot is None:
            if index in self._closed and not delta.id:
                raise ModelServerError(
                    f"chat completions stream continued tool call index {index}"
                    " after that call was complete"
                )
            slot = self._pending[index] = _Slot(self._slot_count)
            # Numbered when it starts, not when it is flushed: text the model
            # sends after this call (before the stream ends) comes after it.
            self._blocks.of(("call", slot.key))
            self._slot_count += 1
            self._run += 1
        if delta.id:
            slot.id = delta.id
        function = delta.function
        if function is not None:
            if function.name and not slot.name:
                slot.name = function.name
            if function.arguments:
                slot.parts.append(function.arguments)
        return out

    def _flush(self, which: Callable[[int], bool]) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        for index in [i for i in self._pending if which(i)]:
            self._closed.add(index)
            out.extend(self._ready(self._pending.pop(index)))
        return out

    def _ready(self, slot: _Slot) -> list[StreamChunk]:
        calls = self._calls.build(slot.id, slot.name, "".join(slot.parts))
        numbers = [self._blocks.of(("call", slot.key))]
        numbers += [self._blocks.fresh() for _ in calls[1:]]
        return [ToolUseReady(c, block=n) for c, n in zip(calls, numbers, strict=True)]


def _first_choice(choices: Iterable[Any]) -> Any:
    """Choice 0 of the chunk, or None (also for a chunk with no ``choices`` at all).

    A stream with several choices (``n > 1``) interleaves them one per chunk;
    the response is choice 0's, so the others are skipped rather than mixed
    into it. A server that leaves the index out means its only choice.
    """
    for choice in choices:
        if choice.index is None or choice.index == 0:
            return choice
    return None


def _is_new_call(slot: _Slot, call_id: str | None) -> bool:
    """Same index, another id, after arguments: a server that numbers every call 0."""
    return bool(call_id and slot.id and call_id != slot.id and slot.parts)


def _usage(usage: Any) -> Usage:
    return openai_usage(
        usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details
    )


def openai_usage(input_tokens: object, output_tokens: object, details: Any) -> Usage:
    """Neutral usage from an OpenAI usage block (Chat and Responses name fields apart).

    OpenAI counts cached and cache-written tokens inside the input total; the
    neutral `Usage` keeps them apart, so they are taken out of `input_tokens`.
    Each count goes through `token_count` (a malformed one counts as 0).
    """
    cached = token_count(getattr(details, "cached_tokens", None))
    written = token_count(getattr(details, "cache_write_tokens", None))
    return Usage(
        max(token_count(input_tokens) - cached - written, 0),
        token_count(output_tokens),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        requests=1,
    )
