"""ScriptedModel: a strict, deterministic model for tests and the demo."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TypeAlias, final

import anyio

from .._exceptions import ModelError, UnexpectedModelCallError
from ..messages import ModelResponse, Text, Thinking, ToolCall
from ._base import (
    Model,
    ModelRequest,
    ReasoningChunk,
    StreamChunk,
    StreamEnd,
    TextChunk,
    ToolUseReady,
)

__all__ = ["ScriptStep", "ScriptedModel"]


@dataclass(frozen=True, slots=True)
class ScriptStep:
    """One scripted answer with stream timing and faults.

    Delays are anyio time, so under trio's MockClock stream timing is exact.
    """

    response: ModelResponse | Callable[[ModelRequest], ModelResponse]
    """The response, or a function of the request that returns it."""
    _: KW_ONLY
    first_chunk_delay: float = 0.0
    """Seconds before the first chunk."""
    chunk_delay: float = 0.0
    """Seconds between chunks."""
    text_chunk_chars: int | None = None
    """Split text blocks into pieces of this many characters; None = one piece."""
    fail_after_chunks: int | None = None
    """Raise `error` after this many chunks (a stream cut mid-way)."""
    error: ModelError | None = None
    """What to raise: at once (if `fail_after_chunks` is None) or mid-stream."""


ScriptItem: TypeAlias = (
    ModelResponse | Callable[[ModelRequest], ModelResponse] | ScriptStep | ModelError
)


def _chunks(response: ModelResponse, text_chunk_chars: int | None) -> list[StreamChunk]:
    out: list[StreamChunk] = []
    for index, block in enumerate(response.content):
        if isinstance(block, Text):
            size = text_chunk_chars or max(len(block.text), 1)
            out.extend(
                TextChunk(
                    block.text[i : i + size],
                    block=index,
                    provider_id=block.provider_id,
                )
                for i in range(0, max(len(block.text), 1), size)
            )
        elif isinstance(block, Thinking):
            out.append(
                ReasoningChunk(
                    block.text,
                    block=index,
                    signature=block.signature,
                    redacted_data=block.redacted_data,
                    provider_id=block.provider_id,
                    encrypted_content=block.encrypted_content,
                )
            )
        elif isinstance(block, ToolCall):
            out.append(ToolUseReady(block, block=index))
    out.append(
        StreamEnd(
            response.stop_reason,
            response.usage,
            raw_stop_reason=response.raw_stop_reason,
            model=response.model,
        )
    )
    return out


@final
class ScriptedModel(Model):
    """Answers with a fixed script, one item per call, and fails loudly past its end.

    Each item is a `ModelResponse`, a function ``(request) -> ModelResponse`` for
    dynamic turns, a `ScriptStep` (timing and mid-stream faults), or a
    `ModelError` to raise. Every request is kept in `requests`.
    """

    def __init__(
        self,
        responses: Sequence[ScriptItem],
        *,
        name: str = "scripted",
        chunk_delay: float = 0.0,
        context_window: int | None = None,
    ) -> None:
        self._script = list(responses)
        self._name = name
        self._chunk_delay = chunk_delay
        self._context_window = context_window
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    @property
    def name(self) -> str:
        """The model name."""
        return self._name

    @property
    def context_window(self) -> int | None:
        """The context window this model pretends to have."""
        return self._context_window

    @property
    def remaining(self) -> int:
        """How many script items are left."""
        return len(self._script) - len(self.requests)

    def assert_complete(self) -> None:
        """Raise AssertionError unless every script item was used."""
        if self.remaining:
            raise AssertionError(
                f"ScriptedModel {self._name!r}: {self.remaining} scripted response(s) unused"
            )

    def _next_step(self, request: ModelRequest) -> ScriptStep:
        number = len(self.requests) + 1
        if number > len(self._script):
            raise UnexpectedModelCallError(
                f"ScriptedModel {self._name!r}: unexpected call #{number} "
                f"(the script has {len(self._script)} response(s))"
            )
        self.requests.append(request)
        item = self._script[number - 1]
        if isinstance(item, ScriptStep):
            return item
        if isinstance(item, ModelError):
            return ScriptStep(ModelResponse(()), error=item)
        return ScriptStep(item, chunk_delay=self._chunk_delay)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Yield the next scripted response as chunks, with its scripted delays."""
        step = self._next_step(request)
        if step.error is not None and step.fail_after_chunks is None:
            raise step.error
        response = (
            step.response
            if isinstance(step.response, ModelResponse)
            else step.response(request)
        )
        if step.first_chunk_delay:
            await anyio.sleep(step.first_chunk_delay)
        for sent, chunk in enumerate(_chunks(response, step.text_chunk_chars)):
            if step.error is not None and sent == step.fail_after_chunks:
                raise step.error
            if sent and step.chunk_delay:
                await anyio.sleep(step.chunk_delay)
            yield chunk
