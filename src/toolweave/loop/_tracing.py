"""Tracing: OpenTelemetry spans run -> iteration -> model call / tool call (GenAI conventions).

OpenTelemetry is optional. Without it (or with tracing disabled) every span is a
shared no-op object, so tracing costs a method call per span and nothing more.
Payloads (prompts, tool inputs and outputs) are recorded only when
`TracePolicy.capture_payloads` is on.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, final

__all__ = ["NULL_SPAN", "NULL_TRACER", "Span", "TracePolicy", "Tracer", "make_tracer"]

AttributeValue: TypeAlias = str | bool | int | float | tuple[str, ...]
SpanKind: TypeAlias = Literal["internal", "client"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TracePolicy:
    """How a run is traced."""

    enabled: bool = True
    """Emit spans when OpenTelemetry is installed."""
    capture_payloads: bool = False
    """Record prompts, responses, tool inputs and outputs on spans (off: they may hold secrets)."""
    tracer_provider: Any = None
    """An OpenTelemetry TracerProvider; None = the global one."""


class Span:
    """A span that records nothing: the base of real spans and the no-op one."""

    __slots__ = ()

    def set(self, key: str, value: AttributeValue | None) -> None:
        """Set an attribute (None is skipped)."""

    def fail(self, error_type: str, message: str) -> None:
        """Mark the span as failed (``error.type`` and an ERROR status)."""

    def end(self) -> None:
        """End the span. Idempotent."""


NULL_SPAN: Final = Span()
"""The span used when tracing is off."""


@final
class _OtelSpan(Span):
    __slots__ = ("_ended", "_span", "_status")

    def __init__(self, span: Any, status: Any) -> None:
        self._span = span
        self._status = status
        self._ended = False

    def set(self, key: str, value: AttributeValue | None) -> None:
        if value is not None:
            self._span.set_attribute(key, value)

    def fail(self, error_type: str, message: str) -> None:
        self._span.set_attribute("error.type", error_type)
        self._span.set_status(
            self._status.Status(self._status.StatusCode.ERROR, message)
        )

    def end(self) -> None:
        if not self._ended:
            self._ended = True
            self._span.end()


class Tracer:
    """Starts spans; the base class is the no-op tracer.

    Safe to use from any task of the run's event loop; parents are passed
    explicitly, so spans nest correctly across the dispatcher's tasks.
    """

    enabled: bool = False
    """Whether spans record anything (False: skip building attributes)."""
    captures_payloads: bool = False
    """Whether payload attributes should be computed at all."""

    def start(
        self,
        name: str,
        *,
        parent: Span | None = None,
        kind: SpanKind = "internal",
        attributes: dict[str, AttributeValue | None] | None = None,
    ) -> Span:
        """Start a span named `name` under `parent` (None = the current context)."""
        del name, parent, kind, attributes
        return NULL_SPAN

    def activate(self, span: Span) -> AbstractContextManager[None]:
        """Make `span` the current span of this task while the block runs.

        Work started inside (a sub-agent's run) then nests its spans under it.
        """
        del span
        return nullcontext()


@final
class _OtelTracer(Tracer):
    def __init__(
        self, trace: Any, status: Any, context: Any, provider: Any, payloads: bool
    ) -> None:
        self._trace = trace
        self._status = status
        self._context = context
        source = provider if provider is not None else trace.get_tracer_provider()
        self._tracer = source.get_tracer("toolweave")
        self.enabled = True
        self.captures_payloads = payloads

    def start(
        self,
        name: str,
        *,
        parent: Span | None = None,
        kind: SpanKind = "internal",
        attributes: dict[str, AttributeValue | None] | None = None,
    ) -> Span:
        context = None
        if isinstance(parent, _OtelSpan):
            context = self._trace.set_span_in_context(parent._span)
        span_kind = (
            self._trace.SpanKind.CLIENT
            if kind == "client"
            else self._trace.SpanKind.INTERNAL
        )
        clean = {k: v for k, v in (attributes or {}).items() if v is not None}
        span = self._tracer.start_span(
            name, context=context, kind=span_kind, attributes=clean
        )
        return _OtelSpan(span, self._status)

    @contextmanager
    def activate(self, span: Span) -> Iterator[None]:
        if not isinstance(span, _OtelSpan):
            yield
            return
        token = self._context.attach(self._trace.set_span_in_context(span._span))
        try:
            yield
        finally:
            self._context.detach(token)


NULL_TRACER: Final = Tracer()


def make_tracer(policy: TracePolicy) -> Tracer:
    """A tracer for `policy`: OpenTelemetry's if installed and enabled, else the no-op one."""
    if not policy.enabled:
        return NULL_TRACER
    try:
        trace = importlib.import_module("opentelemetry.trace")
        status = importlib.import_module("opentelemetry.trace.status")
        context = importlib.import_module("opentelemetry.context")
    except ImportError:
        return NULL_TRACER
    return _OtelTracer(
        trace, status, context, policy.tracer_provider, policy.capture_payloads
    )
