"""The shape every SDK-backed model shares: open a request, map its events, map its errors.

A provider subclass supplies four things: how to open a request through the SDK
(streamed or whole, with or without the parallel-tool-calls flag), a fresh event
mapper, its SDK error seam, and the flag's wire name. This module owns the rest:
the flag decision, the streaming decision, the one-shot recoveries when a server
refuses either (learned once, warned once, kept in `LearnedCapabilities`), the
end-of-stream stop-reason repair, and closing the SDK stream on every exit path.

The SDKs build their event objects without validating them, so a gateway's
event with a field missing or of the wrong type reaches the mapper as it
came. A mapper that trips on one (an `AttributeError`, `TypeError` …) is
reporting the provider's malformed data, not a toolweave bug: it is raised as
`ModelServerError` (retryable, like any malformed stream data) naming the
event, never as an internal error that ends the run.

A whole (non-streamed) response is replayed as the events its stream would have
carried (`ReplayStream`), through the same mapper: one mapping, one set of
repairs, whichever way the response came.

How a server refuses to stream with tools varies. llama-cpp-python's server
(0.3.x, ``chatml-function-calling``) streams a text answer but, when the model
picks a tool, sends HTTP 200 ``text/event-stream`` and ends the stream before
its first event; other servers answer an HTTP 4xx/5xx error object naming
streaming, or answer the streamed request whole. Each is only a *suspected*
refusal, and only while streaming with tools is unproven (once a streamed
request has delivered a tool call, a later failure is an ordinary error,
retried by the gateway): the same request is sent whole, and the refusal is
learned (and warned about, once) only if that whole request is answered.
Anything else is raised as what it is and teaches nothing: an HTML page, plain
text or JSON of another shape is an `UnexpectedResponseError` naming the URL
(`_unexpected`), a proxy's error page is classified by its status, and a word
like "upstream" in an error is not "stream". One bad answer is not a
capability.
"""

from __future__ import annotations

import abc
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Protocol, TypedDict, Unpack

import anyio

from .._exceptions import (
    ModelConnectionError,
    ModelError,
    ModelServerError,
    ToolweaveError,
    UnexpectedResponseError,
)
from ..messages import StopReason
from ._base import Model, ModelRequest, StreamChunk, StreamEnd, ToolUseReady
from ._capabilities import (
    Capabilities,
    LearnedCapabilities,
    Provider,
    context_window_for,
    parallel_flag_supported,
)
from ._errors import names_parameter, refuses_streaming
from ._sdk_streams import MALFORMED, SDKStream, peek, stream_url
from ._warnings import WarningHandler, deliver_warning

__all__ = ["EventMapper", "ProviderModel", "ProviderOptions"]


class EventMapper(Protocol):
    """Turns one stream's SDK events into neutral chunks. One mapper per stream."""

    def feed(self, event: Any) -> Sequence[StreamChunk]:
        """Chunks for one SDK event (often none). May raise a `ModelError`."""

    def finish(self) -> Sequence[StreamChunk]:
        """Chunks due when the SDK stream ended; the last is a `StreamEnd`.

        Raises `ModelConnectionError` if the stream ended before the provider
        said it was complete (a cut that closed cleanly at the HTTP level).
        """


class ProviderOptions(TypedDict, total=False):
    """The options every SDK-backed model takes, as keywords (`ProviderModel` reads them).

    Each provider's constructor documents them under its ``Args``; they are
    one group because the base class, not the provider, acts on them.
    """

    stream: bool
    """Stream responses (default True); False sends every request whole."""
    timeout: float
    """Seconds the SDK waits for the server, per read (default 600)."""
    context_window: int | None
    """Overrides the known-model table."""
    supports_parallel_tool_calls: bool | None
    """Overrides the capability table."""
    on_warning: WarningHandler | None
    """Receives a `toolweave.events.Warning` (see the providers' ``Args``)."""


class ProviderModel(Model):
    """Base of the SDK-backed models. Subclasses implement the abstract hooks.

    A model instance belongs to one event loop (its SDK client keeps pooled
    connections); `aclose()` releases them. What it learns from its server's
    refusals (`capabilities`) lasts as long as the instance.
    """

    _provider: Provider
    _flag_name: str

    def __init__(self, name: str, **options: Unpack[ProviderOptions]) -> None:
        unknown = sorted(set(options) - set(ProviderOptions.__annotations__))
        if unknown:
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument"
                f" {unknown[0]!r}"
            )
        self._name = name
        self._stream = options.get("stream", True)
        self._timeout = options.get("timeout", 600.0)
        """Seconds the SDK waits for the server (per read)."""
        self._context_window = options.get("context_window") or context_window_for(name)
        self._flag_configured = options.get("supports_parallel_tool_calls")
        self._learned = LearnedCapabilities()
        self._on_warning = options.get("on_warning")

    @property
    def name(self) -> str:
        """The provider's model name."""
        return self._name

    @property
    def context_window(self) -> int | None:
        """Tokens the model accepts: as configured, else from the known-model table."""
        return self._context_window

    @property
    def sends_parallel_flag(self) -> bool:
        """Whether requests with tools carry the parallel-tool-calls flag.

        False once the provider rejected the flag (remembered for this model).
        """
        if self._learned.parallel_flag_rejected:
            return False
        if self._flag_configured is not None:
            return self._flag_configured
        return parallel_flag_supported(self._provider, self._name)

    @property
    def capabilities(self) -> Capabilities:
        """What this model does on the wire now, after what it learned."""
        return Capabilities(
            parallel_flag=self.sends_parallel_flag,
            streams_with_tools=self._streams(with_tools=True),
            streams_without_tools=self._stream,
            streaming_with_tools_confirmed=self._learned.streaming_with_tools is True,
        )

    def _streams(self, *, with_tools: bool) -> bool:
        """Whether a request (with tools or without) is streamed."""
        if with_tools and self._learned.streaming_with_tools is False:
            return False
        return self._stream

    @abc.abstractmethod
    async def _open(
        self, request: ModelRequest, *, send_flag: bool, stream: bool
    ) -> SDKStream:
        """Send the request through the SDK and return its events (raises SDK errors).

        With ``stream=False`` the request is sent whole and the response comes
        back as a `ReplayStream` of the events a stream would have carried.
        """

    @abc.abstractmethod
    def _new_mapper(self, request: ModelRequest) -> EventMapper:
        """A fresh event mapper for one stream."""

    @abc.abstractmethod
    def _map_error(self, exc: BaseException) -> ModelError | None:
        """The SDK seam: the neutral error for `exc`, or None if it is not the SDK's."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Send `request` and yield neutral chunks; the last one is a `StreamEnd`.

        Raises only `ModelError` subclasses (the SDK's exception chained as
        ``__cause__``). A stream cut mid-way raises `ModelConnectionError` after
        the chunks already received. Close the iterator (``aclose``) if you
        stop early, so the HTTP response is released at once. A request sent
        whole (``stream=False``, or after the server refused to stream with
        tools) yields the same chunks, all at once when the response is in.
        """
        events, probing = await self._open_adapting(request)
        mapper = self._new_mapper(request)
        iterator = aiter(events)
        called = False
        try:
            async for event in iterator:
                try:
                    chunks = mapper.feed(event)
                except MALFORMED as exc:
                    raise self._malformed(exc, event, events) from exc
                for chunk in chunks:
                    called = called or isinstance(chunk, ToolUseReady)
                    yield chunk
            try:
                ending = mapper.finish()
            except MALFORMED as exc:
                raise self._malformed(exc, None, events) from exc
            for chunk in ending:
                called = called or isinstance(chunk, ToolUseReady)
                yield _tool_use_if_called(chunk, called)
        except Exception as exc:
            mapped = self._map_stream_error(exc, events)
            if mapped is None:
                raise
            raise mapped from exc
        finally:
            with anyio.CancelScope(shield=True):
                if isinstance(iterator, AsyncGenerator):
                    await iterator.aclose()
                await events.close()
        if probing and called:
            self._learned.streaming_with_tools = True  # it streamed a tool call

    def _map_stream_error(
        self, exc: Exception, events: SDKStream | None
    ) -> ModelError | None:
        """`_map_error`, and a `ValueError` decoding the stream's data as malformed data.

        While a stream is read, a `ValueError` that is not ours comes from the
        SDK decoding the provider's data (an event that is not JSON, or an
        integer past Python's 4300-digit limit, which the SDKs do not catch).
        Malformed data is a `ModelServerError` (retryable) naming the URL.
        """
        mapped = self._map_read_error(exc, events)
        if mapped is None and _undecodable(exc):
            mapped = ModelServerError(
                f"{self._source(events)} sent stream data that cannot be decoded:"
                f" {exc}"[:500]
            )
        return mapped

    def _map_read_error(
        self, exc: Exception, events: SDKStream | None
    ) -> ModelError | None:
        """`_map_error`, with an event that is not JSON named with the stream's URL."""
        if isinstance(exc, json.JSONDecodeError):
            began = " ".join(exc.doc[:120].split())
            return ModelServerError(
                f"{self._source(events)} sent a stream event that is not JSON"
                f" ({exc.msg}); it began: {began!r}"
            )
        return self._map_error(exc)

    def _malformed(
        self, exc: Exception, event: object, events: SDKStream
    ) -> ModelServerError:
        """The error for an event (None: the stream's end) the mapper could not read."""
        kind = getattr(event, "type", None) if event is not None else "end of stream"
        where = f"event {kind!r}" if isinstance(kind, str) else "event"
        return ModelServerError(
            f"{self._source(events)} sent a malformed stream {where}: "
            f"{type(exc).__name__}: {exc}"[:500]
        )

    def _source(self, events: SDKStream | None) -> str:
        """Who sent a stream, for messages: the URL when known, else the provider."""
        url = None if events is None else stream_url(events)
        if url is None:
            return f"the {self._provider} provider"
        return f"the {self._provider} provider at {url}"

    async def _open_adapting(self, request: ModelRequest) -> tuple[SDKStream, bool]:
        """Open the request, adapting once to each refusal the server can make.

        Returns the events and whether this was a streamed request with tools
        while streaming with tools is unproven (its tool calls prove it).

        A provider that rejects ``parallel_tool_calls`` must not cause a 400
        loop, and neither must one that refuses to stream with tools. A flag
        rejection by name is learned at once (one way, for this model), warned
        about once, and the request is sent again without the flag. A
        suspected refusal to stream is sent again whole and learned (and
        warned about) only when that whole request is answered; if it fails,
        its error is raised and nothing is learned. Right after an empty
        stream, a connection error gets one more try (see the end of the
        loop). So a request costs at most five attempts, and only the first
        request that meets each refusal.
        """
        with_tools = bool(request.tools)
        stale_connection = False
        suspected: str | None = None  # how the server seemed to refuse streaming
        while True:
            events: SDKStream | None = None
            send_flag = with_tools and self.sends_parallel_flag
            streamed = suspected is None and self._streams(with_tools=with_tools)
            probing = (
                streamed and with_tools and self._learned.streaming_with_tools is None
            )
            try:
                events = await self._open(request, send_flag=send_flag, stream=streamed)
                if suspected is not None:  # answered whole: the refusal is confirmed
                    self._refused_streaming(suspected)
                if not probing:
                    return events, False
                peeked = await peek(events)
            except Exception as exc:
                mapped = (
                    exc
                    if isinstance(exc, ModelError)
                    else self._map_read_error(exc, events)
                )
                if mapped is None:
                    raise
                if stale_connection and isinstance(mapped, ModelConnectionError):
                    stale_connection = False  # see below; once only
                    continue
                if send_flag and names_parameter(mapped, self._flag_name):
                    self._flag_rejected()
                    continue
                if probing and _seems_to_refuse_streaming(exc, mapped):
                    suspected = f"it answered {mapped}"
                    continue
                raise mapped from exc
            if peeked is not None:
                return peeked, True
            suspected = "it ended the stream before sending anything"
            # A server that gives up after the headers closes the connection
            # right after; the client may already have pooled it. The whole
            # request sent next may meet that dead connection: it gets one
            # more try on a fresh one.
            stale_connection = True

    def _flag_rejected(self) -> None:
        self._learned.parallel_flag_rejected = True
        self._warn(
            f"{self._name}: the provider rejected {self._flag_name!r}; "
            "retrying once without it, and never sending it to this model again"
        )

    def _refused_streaming(self, how: str) -> None:
        self._learned.streaming_with_tools = False
        self._warn(
            f"{self._name}: the server refused to stream a response with tools"
            f" ({how}); sending requests with tools to this model whole from now"
            " on (no streaming overlap: tools start when the response is in)"
        )

    def _warn(self, message: str) -> None:
        deliver_warning(message, self._on_warning)


def _seems_to_refuse_streaming(exc: Exception, mapped: ModelError) -> bool:
    """Whether a streamed request with tools failed the way a refusal to stream does.

    An error object naming streaming (`refuses_streaming`), or a whole API
    response where an event stream was asked for. Only a suspicion: the
    caller sends the request whole and learns only if that is answered.
    """
    if isinstance(mapped, UnexpectedResponseError):
        return mapped.answered_whole
    return refuses_streaming(exc, mapped)


def _undecodable(exc: Exception) -> bool:
    """Whether `exc`, raised while a stream is read, is a decoding failure of its data."""
    return isinstance(exc, ValueError) and not isinstance(exc, ToolweaveError)


def _tool_use_if_called(chunk: StreamChunk, called: bool) -> StreamChunk:
    """The stream's end, saying TOOL_USE if it ended a turn that made tool calls.

    Some OpenAI-compatible servers send ``finish_reason: "stop"`` on a
    response with tool calls (llama-cpp-python 0.3.36 says ``tool_calls``;
    the case is tested on its captured response with the field changed). The
    calls are what the model did, so the neutral reason follows them; the raw
    string is kept.
    """
    if not isinstance(chunk, StreamEnd) or not called:
        return chunk
    if chunk.stop_reason is not StopReason.END_TURN:
        return chunk
    return StreamEnd(
        StopReason.TOOL_USE,
        chunk.usage,
        raw_stop_reason=chunk.raw_stop_reason,
        model=chunk.model,
    )
