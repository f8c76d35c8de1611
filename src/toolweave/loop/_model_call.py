"""One model call: stream it, report deltas, offer tool calls for an early start.

With streaming overlap, each complete tool call is offered to the iteration's
`EagerBatch` the moment its TOOL_USE_READY chunk arrives; it decides when the
Dispatcher's streaming batch opens (see `_eager`). When the gateway
(`RetryingModel`) restarts a stream that died mid-way, the dead attempt's early
calls are discarded — nothing of them is ever harvested.

Every tool call gets its `ToolCall.key` here, as it arrives: ``"<iteration>.
<position>"``, its position counted among the calls of this attempt; a stream the
gateway restarted numbers its calls ``"<iteration>~<attempt>.<position>"``, so a
dead attempt's early call (which may have run, and been persisted) is never
taken for the live attempt's call at the same position. Keys are unique in the
run and the same in every run of the same conversation (transcripts stay
byte-identical). Everything downstream (previews, events, the store) keys by
it, never by the provider's id, which models repeat.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, final

import anyio

from .._utf8 import utf8_text
from ..events import (
    Event,
    ModelCallFinished,
    ModelCallStarted,
    ReasoningDelta,
    TextDelta,
)
from ..events import Warning as WarningEvent
from ..messages import ModelResponse, ToolCall
from ..models import (
    ChunkAggregator,
    Model,
    ModelRequest,
    ReasoningChunk,
    RetryInfo,
    RetryingModel,
    RetryPolicy,
    StreamChunk,
    StreamRestart,
    TextChunk,
    ToolUseReady,
    forward_warnings,
)
from ._tracing import NULL_SPAN, Span, Tracer

if TYPE_CHECKING:
    from ._control import RunControl
    from ._eager import EagerBatch

__all__ = ["Halted", "ModelCaller"]


@dataclass(frozen=True, slots=True)
class Halted:
    """The run was halted while the response streamed."""

    partial: ModelResponse
    """What had streamed of the current attempt: its text and complete tool calls
    (stop reason UNKNOWN). Calls of it may have started early."""


@final
class ModelCaller:
    """Streams one response at a time and reports it as events and a span.

    Used from the loop's task only.
    """

    def __init__(
        self,
        model: Model,
        *,
        fallbacks: Sequence[Model] = (),
        policy: RetryPolicy | None = None,
        emit: Callable[[Event], None],
        tracer: Tracer,
        control: RunControl,
        clock: Callable[[], float],
    ) -> None:
        self.model: Model = (
            model
            if isinstance(model, RetryingModel)
            else RetryingModel(
                model, fallbacks=fallbacks, policy=policy, on_retry=self._on_retry
            )
        )
        """The model behind the retry gateway (a RetryingModel given by the user is kept)."""
        self._emit = emit
        self._tracer = tracer
        self._control = control
        self._clock = clock

    def _on_retry(self, info: RetryInfo) -> None:
        self._emit(info.to_event())

    def _warning(self, warning: WarningEvent) -> None:
        self._emit(WarningEvent(warning.message, at=self._clock()))

    async def call(
        self,
        request: ModelRequest,
        *,
        iteration: int,
        parent: Span,
        eager: EagerBatch | None,
    ) -> ModelResponse | Halted:
        """Stream the response to `request`, or what had streamed when the run was halted.

        A checkpoint; the run's halt signal cancels it. Complete tool calls are
        offered to `eager` (None = no streaming overlap).

        Raises:
            ModelError: when the gateway gave up.
        """
        span = self._start_span(request, parent)
        self._emit(ModelCallStarted(iteration, self.model.name, at=self._clock()))
        try:
            response = await self._consume(request, eager, iteration)
        except BaseException as exc:
            span.fail(type(exc).__name__, str(exc)[:200])
            span.end()
            raise
        if isinstance(response, Halted):
            span.fail("interrupted", "the run was halted during the model call")
            span.end()
            return response
        self._finish_span(span, response)
        self._emit(ModelCallFinished(iteration, response, at=self._clock()))
        return response

    async def _consume(
        self, request: ModelRequest, eager: EagerBatch | None, iteration: int
    ) -> ModelResponse | Halted:
        aggregator = ChunkAggregator()
        chunks = self.model.stream(request)
        exhausted = False
        try:
            # A provider's warnings (a refused flag, a server that will not
            # stream with tools) become events of this run.
            with forward_warnings(self._warning), self._control.halt_scope() as scope:
                await self._pump(chunks, aggregator, eager, iteration)
                exhausted = True
            if scope.cancelled_caught:
                return Halted(aggregator.response())
            return aggregator.response()
        finally:
            if not exhausted:  # an exhausted generator has nothing to release
                await _close(chunks)

    async def _pump(
        self,
        chunks: AsyncIterator[StreamChunk],
        aggregator: ChunkAggregator,
        eager: EagerBatch | None,
        iteration: int,
    ) -> None:
        prefix, attempt, position = f"{iteration}.", 1, 0
        async for chunk in chunks:
            if isinstance(chunk, ToolUseReady):
                call = _arrived(chunk.call, f"{prefix}{position}")
                position += 1
                aggregator.add(ToolUseReady(call, block=chunk.block))
                if eager is not None:
                    await eager.warm(call)
                    eager.offer(call)
                continue
            if isinstance(chunk, TextChunk):
                chunk = dataclasses.replace(chunk, text=utf8_text(chunk.text))
            aggregator.add(chunk)  # resets itself on StreamRestart
            if isinstance(chunk, StreamRestart):
                attempt += 1
                prefix, position = f"{iteration}~{attempt}.", 0
                if eager is not None:
                    eager.restart()
            else:
                self._report(chunk)

    def _report(self, chunk: StreamChunk) -> None:
        if isinstance(chunk, TextChunk):
            if chunk.text:
                self._emit(TextDelta(chunk.text, at=self._clock()))
        elif isinstance(chunk, ReasoningChunk) and chunk.text:
            self._emit(ReasoningDelta(chunk.text, at=self._clock()))

    def _start_span(self, request: ModelRequest, parent: Span) -> Span:
        tracer = self._tracer
        if not tracer.enabled:
            return NULL_SPAN
        span = tracer.start(
            f"chat {self.model.name}",
            parent=parent,
            kind="client",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": self.model.name,
                "gen_ai.request.max_tokens": request.max_tokens,
                "gen_ai.request.temperature": request.temperature,
            },
        )
        if tracer.captures_payloads:
            span.set("gen_ai.system_instructions", request.system)
            span.set("gen_ai.input.messages", repr(list(request.messages)))
        return span

    def _finish_span(self, span: Span, response: ModelResponse) -> None:
        if not self._tracer.enabled:
            return
        span.set("gen_ai.response.model", response.model or self.model.name)
        span.set("gen_ai.response.finish_reasons", (response.stop_reason.value,))
        span.set("gen_ai.usage.input_tokens", response.usage.input_tokens)
        span.set("gen_ai.usage.output_tokens", response.usage.output_tokens)
        if self._tracer.captures_payloads:
            span.set("gen_ai.output.messages", repr(list(response.content)))
        span.end()


def _arrived(call: ToolCall, key: str) -> ToolCall:
    r"""The call as the run keeps it: keyed, its id, name and raw arguments UTF-8.

    A model can send a lone surrogate (a ``\ud800`` escape in its JSON); kept,
    it would fail the session store and every later request (sent as UTF-8).
    The parsed input is left as sent: its schema refuses such text (the call
    fails closed rather than running with changed arguments).
    """
    raw = call.raw_arguments
    return dataclasses.replace(
        call,
        id=utf8_text(_call_id(call.id)),
        name=utf8_text(call.name),
        raw_arguments=None if raw is None else utf8_text(raw),
        key=key,
    )


def _call_id(raw: object) -> str:
    """The id as text: a model of the user's own may send None (or a number).

    None becomes the empty id, which the store accepts and the wire repair fills.
    """
    if isinstance(raw, str):
        return raw
    return "" if raw is None else str(raw)


async def _close(chunks: AsyncIterator[StreamChunk]) -> None:
    """Close the stream even when cancelled (releases the HTTP response)."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        with anyio.CancelScope(shield=True):
            await aclose()
