"""The Model contract: one request in, a stream of neutral chunks out."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeAlias

from ..messages import (
    AssistantBlock,
    Message,
    ModelResponse,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    Usage,
)

__all__ = [
    "ChunkAggregator",
    "Model",
    "ModelRequest",
    "ReasoningChunk",
    "StreamChunk",
    "StreamEnd",
    "StreamRestart",
    "TextChunk",
    "ToolDefinition",
    "ToolUseReady",
]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model is told about it."""

    name: str
    """The model-facing name."""
    description: str
    """What the tool does."""
    input_schema: Mapping[str, Any]
    """JSON schema of the input."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs, in neutral terms."""

    messages: Sequence[Message]
    """The conversation so far."""
    _: KW_ONLY
    system: str | None = None
    """The system prompt."""
    tools: Sequence[ToolDefinition] = ()
    """Tools offered to the model."""
    tool_choice: Literal["auto", "any", "none"] | str = "auto"
    """``auto``, ``any`` (must call one), ``none``, or a tool name to force."""
    parallel_tool_calls: bool = True
    """May the model return several tool calls at once? (request side only).

    Providers omit the flag when no tools are sent or the model family must not
    get it; this never changes how calls are executed.
    """
    max_tokens: int = 4096
    """Cap on generated tokens."""
    temperature: float | None = None
    """Sampling temperature; None = provider default."""
    stop_sequences: tuple[str, ...] = ()
    """Strings that end generation."""
    metadata: Mapping[str, str] = field(default_factory=dict)
    """Opaque request metadata (user id, run id)."""


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of visible text of content block `block`."""

    text: str
    """The new text."""
    _: KW_ONLY
    block: int = 0
    """Index of the content block it belongs to."""
    provider_id: str | None = field(default=None, compare=False)
    """The provider's item id of the message the block is (Responses ``msg_…``).

    Any piece may carry it; the last one given wins. It becomes `Text.provider_id`.
    Not part of equality, like `Text.provider_id`.
    """


@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """A piece of a reasoning block; the closing piece may carry its signature."""

    text: str
    """The new reasoning text (may be empty on the closing piece)."""
    _: KW_ONLY
    block: int = 0
    """Index of the content block it belongs to."""
    signature: str | None = None
    """The block's signature, sent once when the provider gives it."""
    redacted_data: str | None = None
    """Opaque data of a redacted block."""
    provider_id: str | None = None
    """The provider's id for this reasoning item."""
    encrypted_content: str | None = None
    """Encrypted reasoning content to pass back."""


@dataclass(frozen=True, slots=True)
class ToolUseReady:
    """One complete tool call, emitted the moment its block closes in the stream."""

    call: ToolCall
    """The call, with parsed JSON input (or `raw_arguments` set if it was not JSON)."""
    _: KW_ONLY
    block: int = 0
    """Index of the content block it was."""


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """The last chunk of a stream: why it stopped and what it cost."""

    stop_reason: StopReason
    """Neutral stop reason."""
    usage: Usage = field(default_factory=Usage)
    """Tokens of this call."""
    _: KW_ONLY
    raw_stop_reason: str | None = None
    """The provider's own string."""
    model: str | None = None
    """The model that answered."""


@dataclass(frozen=True, slots=True)
class StreamRestart:
    """Everything streamed before this chunk belonged to an attempt that died.

    Only a retrying model (`RetryingModel`) yields it: when an attempt fails
    after some chunks were already delivered, it yields one `StreamRestart`
    before the next attempt's first chunk. A consumer drops what it built from
    the earlier chunks (text, tool calls, eagerly started tools); a
    `ChunkAggregator` does so by itself.
    """

    attempt: int
    """The 1-based number of the attempt that died."""
    _: KW_ONLY
    model: str
    """The model the next attempt will use."""
    error: str
    """Why the attempt died."""


StreamChunk: TypeAlias = (
    TextChunk | ReasoningChunk | ToolUseReady | StreamEnd | StreamRestart
)
"""The chunk kinds; one class each, so they cannot be mixed up.

A provider yields the first four; `StreamRestart` appears only from a
retrying model, between two attempts.
"""


@dataclass(slots=True)
class _TextSlot:
    text: list[str] = field(default_factory=list)
    provider_id: str | None = None


@dataclass(slots=True)
class _ThinkingSlot:
    text: list[str] = field(default_factory=list)
    signature: str | None = None
    redacted_data: str | None = None
    provider_id: str | None = None
    encrypted_content: str | None = None

    def block(self) -> Thinking:
        return Thinking(
            "".join(self.text),
            self.signature,
            redacted_data=self.redacted_data,
            provider_id=self.provider_id,
            encrypted_content=self.encrypted_content,
        )


class ChunkAggregator:
    """Builds a `ModelResponse` from chunks. Reading a half-built response never raises.

    Blocks are ordered by their `block` index, so a provider that interleaves
    blocks still yields the order the model wrote them in. A `StreamRestart`
    discards everything folded in so far: the response is the last attempt's.
    """

    def __init__(self) -> None:
        self._slots: dict[int, _TextSlot | _ThinkingSlot | ToolCall] = {}
        self.end: StreamEnd | None = None
        """The StreamEnd chunk, once it arrived."""

    def add(self, chunk: StreamChunk) -> None:
        """Fold one chunk in."""
        if isinstance(chunk, TextChunk):
            slot = self._slots.setdefault(chunk.block, _TextSlot())
            if isinstance(slot, _TextSlot):
                slot.text.append(chunk.text)
                slot.provider_id = chunk.provider_id or slot.provider_id
        elif isinstance(chunk, ReasoningChunk):
            thinking = self._slots.setdefault(chunk.block, _ThinkingSlot())
            if isinstance(thinking, _ThinkingSlot):
                thinking.text.append(chunk.text)
                thinking.signature = chunk.signature or thinking.signature
                thinking.redacted_data = chunk.redacted_data or thinking.redacted_data
                thinking.provider_id = chunk.provider_id or thinking.provider_id
                thinking.encrypted_content = (
                    chunk.encrypted_content or thinking.encrypted_content
                )
        elif isinstance(chunk, ToolUseReady):
            self._slots[chunk.block] = chunk.call
        elif isinstance(chunk, StreamRestart):
            self._slots.clear()
            self.end = None
        else:
            self.end = chunk

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls completed so far, in block order."""
        return [s for _, s in sorted(self._slots.items()) if isinstance(s, ToolCall)]

    def response(self) -> ModelResponse:
        """The response as built so far (final once `end` is set)."""
        blocks: list[AssistantBlock] = []
        for _, slot in sorted(self._slots.items()):
            if isinstance(slot, _TextSlot):
                text = "".join(slot.text)
                if text:  # an empty text block is no block (providers reject them)
                    blocks.append(Text(text, provider_id=slot.provider_id))
            elif isinstance(slot, _ThinkingSlot):
                blocks.append(slot.block())
            else:
                blocks.append(slot)
        end = self.end
        if end is None:
            return ModelResponse(blocks, StopReason.UNKNOWN, Usage())
        return ModelResponse(
            blocks,
            end.stop_reason,
            end.usage,
            raw_stop_reason=end.raw_stop_reason,
            model=end.model,
        )


class Model(abc.ABC):
    """A language model behind one streaming call.

    `stream` is the one code path; `complete` drains it through a
    `ChunkAggregator`. Implementations raise `ModelError` subclasses only.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The model's name (as used in price tables and events)."""

    @property
    def context_window(self) -> int | None:
        """Tokens the model accepts, if known (drives auto-compaction)."""
        return None

    @abc.abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Send `request` and yield chunks; the last one is a `StreamEnd`.

        A retrying model may also yield `StreamRestart`: the chunks before it
        are void. Close the iterator (``aclose``) when stopping early.
        """

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Send `request` and return the whole response (drains `stream`)."""
        aggregator = ChunkAggregator()
        async for chunk in self.stream(request):
            aggregator.add(chunk)
        return aggregator.response()

    async def aclose(self) -> None:  # noqa: B027 - a no-op default, not abstract
        """Release what the model holds (HTTP connections). Idempotent.

        The base implementation holds nothing and does nothing.
        """
