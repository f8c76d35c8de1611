"""Anthropic Messages stream events -> neutral chunks.

A tool call is emitted the moment its ``content_block_stop`` arrives. A stream
cut inside a ``tool_use`` block (``max_tokens`` mid-arguments: no
``content_block_stop``, straight to ``message_delta``) still yields that call at
`finish`, with its partial arguments as ``raw_arguments``, as the Chat and
Responses mappers do, so the loop's truncation path sees it. A block index
used twice is two blocks, in order (one would otherwise overwrite the other:
a call lost). Thinking
blocks are streamed verbatim with their signature (redacted ones with their
opaque data). Nothing is aggregated here: the chunks go to the caller only.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, final

from anthropic.types import RawContentBlockDeltaEvent, RawContentBlockStartEvent

from .._exceptions import ModelConnectionError, ModelServerError
from ..messages import StopReason, Usage
from ._base import ReasoningChunk, StreamChunk, StreamEnd, TextChunk, ToolUseReady
from ._blocks import BlockNumbers
from ._repair import ToolCallBuilder
from ._tokens import token_count

__all__ = ["ANTHROPIC_STOP_REASONS", "AnthropicStreamMapper"]

ANTHROPIC_STOP_REASONS: Final[dict[str, StopReason]] = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    # The output was cut because the context window filled up: a truncation.
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
}
"""Anthropic stop reasons we know; others (``pause_turn`` …) are UNKNOWN, raw kept."""

_NOTHING: Final[tuple[StreamChunk, ...]] = ()


@dataclass(slots=True)
class _ToolSlot:
    id: str
    name: str
    initial: dict[str, Any]
    parts: list[str] = field(default_factory=list)


@final
class AnthropicStreamMapper:
    """Maps the events of one Anthropic stream. Not reusable, not thread-safe."""

    def __init__(self, tool_names: Iterable[str] = ()) -> None:
        self._blocks = BlockNumbers()
        self._calls = ToolCallBuilder(tool_names=tool_names)
        self._tools: dict[int, _ToolSlot] = {}
        self._model: str | None = None
        self._input = self._output = self._cache_read = self._cache_write = 0
        self._stop_raw: str | None = None
        self._stopped = False
        self._last_index, self._last_block = -1, -1
        self._kinds: dict[int, str] = {}  # index -> the type its block started as
        self._text_index, self._text_block = -1, -1  # the last text delta's block
        self._keys: dict[int, Hashable] = {}  # a reused index -> its current block
        self._reused = 0

    def feed(self, event: Any) -> tuple[StreamChunk, ...] | list[StreamChunk]:
        """Chunks for one SDK event (most events give none).

        Dispatched on the event's ``type``, not its class: the SDK builds an
        event of a type it does not know as the first class of its union
        (a `RawMessageStartEvent` with no message), so only the type says
        what arrived. Unknown types are skipped.
        """
        if event.__class__ is RawContentBlockDeltaEvent:  # the hot path
            delta: Any = event.delta  # the SDK's union; narrowed by its `type` tag
            if delta.type == "text_delta":
                if event.index != self._text_index:
                    self._enter_text(event.index)
                return (TextChunk(delta.text, block=self._text_block),)
            return self._delta(event.index, delta)
        kind = getattr(event, "type", None)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            return self._stop(event.index)
        if kind == "message_start":
            self._model = event.message.model
            self._calls.response_id = event.message.id
            self._usage(event.message.usage)
        elif kind == "message_delta":
            self._stop_raw = event.delta.stop_reason or self._stop_raw
            self._usage(event.usage)
        elif kind == "message_stop":
            self._stopped = True
        # Any other type (a newer event, a gateway's own) carries nothing we keep.
        return _NOTHING

    def _number(self, index: int) -> int:
        """Our block number for provider index `index` (the last one is cached)."""
        if index != self._last_index:
            key = self._keys.get(index, index)
            self._last_index, self._last_block = index, self._blocks.of(key)
        return self._last_block

    def finish(self) -> list[StreamChunk]:
        """Calls left open by a cut, then the closing `StreamEnd`.

        Raises `ModelConnectionError` if the stream itself was cut (no ``message_stop``).
        """
        if not self._stopped:
            raise ModelConnectionError("anthropic stream ended before message_stop")
        out: list[StreamChunk] = []
        for index in sorted(self._tools):
            out.extend(self._stop(index))
        raw = self._stop_raw
        stop = (
            ANTHROPIC_STOP_REASONS.get(raw, StopReason.UNKNOWN)
            if raw
            else StopReason.UNKNOWN
        )
        usage = Usage(
            self._input,
            self._output,
            cache_read_tokens=self._cache_read,
            cache_write_tokens=self._cache_write,
            requests=1,
        )
        out.append(StreamEnd(stop, usage, raw_stop_reason=raw, model=self._model))
        return out

    def _enter_text(self, index: int) -> None:
        """Check a text delta's block is a text block (or unannounced); cache it."""
        self._expect(index, "text_delta", "text")
        self._text_index, self._text_block = index, self._number(index)

    def _expect(self, index: int, delta: str, kind: str) -> None:
        """Raise `ModelServerError` if block `index` started as another kind.

        A delta for a block never started starts it (as `kind`), so a block
        started later under the same index is another block.

        A delta of one kind into a block of another (text into a tool call,
        arguments into text) has nowhere to go: folded in, it would overwrite
        or be overwritten by the block, and something the model said would be
        lost. The stream is broken; the request is retried.
        """
        started = self._kinds.setdefault(index, kind)  # unannounced: started now
        if started != kind:
            raise ModelServerError(
                f"anthropic stream sent a {delta} to content block {index},"
                f" a {started} block"
            )

    def _delta(self, index: int, delta: Any) -> tuple[StreamChunk, ...]:
        kind = delta.type
        if kind == "input_json_delta":
            slot = self._tools.get(index)
            if slot is not None:
                slot.parts.append(delta.partial_json)
            elif self._kinds.get(index) in (None, "tool_use"):
                # Arguments for a call never opened, or already handed on.
                raise ModelServerError(
                    f"anthropic stream sent input_json_delta to content block"
                    f" {index}, which is not an open tool_use block"
                )
            # else: a server tool's input (server_tool_use …): not ours to run
            return _NOTHING
        if kind == "thinking_delta":
            self._expect(index, kind, "thinking")
            return (ReasoningChunk(delta.thinking, block=self._number(index)),)
        if kind == "signature_delta":
            self._expect(index, kind, "thinking")
            block = self._number(index)
            return (ReasoningChunk("", block=block, signature=delta.signature),)
        return _NOTHING  # citations_delta and future kinds

    def _start(
        self, event: RawContentBlockStartEvent
    ) -> tuple[StreamChunk, ...] | list[StreamChunk]:
        index = event.index
        if index in self._kinds:
            # A second block under one index (a gateway that numbers blocks
            # wrong): a block of its own, after the first, which is closed
            # first if it was a call still open. Nothing is merged or lost.
            closed = self._stop(index)
            self._reused += 1
            self._keys[index] = ("again", self._reused)
            self._last_index = self._text_index = -1
            self._kinds[index] = event.content_block.type
            return [*closed, *self._open(index, event.content_block)]
        self._kinds[index] = event.content_block.type
        return self._open(index, event.content_block)

    def _open(self, index: int, block: Any) -> tuple[StreamChunk, ...]:
        if block.type == "text":
            if block.text:
                return (TextChunk(block.text, block=self._number(index)),)
        elif block.type == "thinking":
            if block.thinking or block.signature:
                return (
                    ReasoningChunk(
                        block.thinking,
                        block=self._number(index),
                        signature=block.signature or None,
                    ),
                )
        elif block.type == "redacted_thinking":
            return (
                ReasoningChunk("", block=self._number(index), redacted_data=block.data),
            )
        elif block.type == "tool_use":
            self._tools[index] = _ToolSlot(
                block.id, block.name, dict(block.input or {})
            )
        return _NOTHING

    def _stop(self, index: int) -> list[StreamChunk]:
        slot = self._tools.pop(index, None)
        if slot is None:
            return []
        arguments = "".join(slot.parts) if slot.parts else slot.initial
        calls = self._calls.build(slot.id, slot.name, arguments)
        numbers = [self._number(index)] + [self._blocks.fresh() for _ in calls[1:]]
        return [
            ToolUseReady(call, block=n) for call, n in zip(calls, numbers, strict=True)
        ]

    def _usage(self, usage: Any) -> None:
        # message_start carries the input side; message_delta carries cumulative
        # counts. A field left out (or an event without usage) keeps the last count.
        if usage is None:
            return
        if usage.input_tokens is not None:
            self._input = token_count(usage.input_tokens)
        if usage.cache_read_input_tokens is not None:
            self._cache_read = token_count(usage.cache_read_input_tokens)
        if usage.cache_creation_input_tokens is not None:
            self._cache_write = token_count(usage.cache_creation_input_tokens)
        if usage.output_tokens is not None:
            self._output = token_count(usage.output_tokens)
