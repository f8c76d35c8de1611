"""The shape every SDK-backed model shares: open a stream, map its events, map its errors.

A provider subclass supplies four things: how to open the SDK stream for a
request (with or without the parallel-tool-calls flag), a fresh event mapper,
its SDK error seam, and the flag's wire name. This module owns the rest: the
flag decision, the one-shot "the server rejected the flag" recovery, and
closing the SDK stream on every exit path.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any, Protocol

import anyio

from .._exceptions import ModelError
from ..events import Warning as WarningEvent
from ._base import Model, ModelRequest, StreamChunk
from ._capabilities import Provider, context_window_for, parallel_flag_supported
from ._errors import names_parameter

__all__ = ["EventMapper", "ProviderModel", "SDKStream", "WarningHandler"]

logger = logging.getLogger("toolweave.models")

WarningHandler = Callable[[WarningEvent], None]
"""Receives a `toolweave.events.Warning` when a provider had to work around something."""


class SDKStream(Protocol):
    """What we need of an SDK's async stream object."""

    def __aiter__(self) -> AsyncIterator[Any]: ...

    async def close(self) -> None:
        """Release the HTTP response."""


class EventMapper(Protocol):
    """Turns one stream's SDK events into neutral chunks. One mapper per stream."""

    def feed(self, event: Any) -> Sequence[StreamChunk]:
        """Chunks for one SDK event (often none). May raise a `ModelError`."""

    def finish(self) -> Sequence[StreamChunk]:
        """Chunks due when the SDK stream ended; the last is a `StreamEnd`.

        Raises `ModelConnectionError` if the stream ended before the provider
        said it was complete (a cut that closed cleanly at the HTTP level).
        """


class ProviderModel(Model):
    """Base of the SDK-backed models. Subclasses implement the abstract hooks.

    A model instance belongs to one event loop (its SDK client keeps pooled
    connections); `aclose()` releases them.
    """

    _provider: Provider
    _flag_name: str

    def __init__(
        self,
        name: str,
        *,
        context_window: int | None = None,
        supports_parallel_tool_calls: bool | None = None,
        on_warning: WarningHandler | None = None,
    ) -> None:
        self._name = name
        self._context_window = context_window or context_window_for(name)
        self._flag_configured = supports_parallel_tool_calls
        self._flag_rejected = False
        self._on_warning = on_warning

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
        if self._flag_rejected:
            return False
        if self._flag_configured is not None:
            return self._flag_configured
        return parallel_flag_supported(self._provider, self._name)

    @abc.abstractmethod
    async def _open(self, request: ModelRequest, *, send_flag: bool) -> SDKStream:
        """Send the request through the SDK and return its event stream (raises SDK errors)."""

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
        stop early, so the HTTP response is released at once.
        """
        send_flag = bool(request.tools) and self.sends_parallel_flag
        events = await self._open_once_more_without_flag(request, send_flag)
        mapper = self._new_mapper(request)
        iterator = aiter(events)
        try:
            async for event in iterator:
                for chunk in mapper.feed(event):
                    yield chunk
            for chunk in mapper.finish():
                yield chunk
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc
        finally:
            with anyio.CancelScope(shield=True):
                if isinstance(iterator, AsyncGenerator):
                    await iterator.aclose()
                await events.close()

    async def _open_once_more_without_flag(
        self, request: ModelRequest, send_flag: bool
    ) -> SDKStream:
        """Open the stream; if the flag is rejected by name, drop it and retry once.

        seed 004: a provider that rejects ``parallel_tool_calls`` must not cause
        a 400 loop. The rejection is remembered, so the retry and every later
        request go without the flag; a second 400 is raised as it is.
        """
        try:
            return await self._open(request, send_flag=send_flag)
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is None:
                raise
            if not (send_flag and names_parameter(mapped, self._flag_name)):
                raise mapped from exc
        self._flag_rejected = True
        self._warn(
            f"{self._name}: the provider rejected {self._flag_name!r}; "
            "retrying once without it, and never sending it to this model again"
        )
        try:
            return await self._open(request, send_flag=False)
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _warn(self, message: str) -> None:
        if self._on_warning is not None:
            self._on_warning(WarningEvent(message))
        else:
            logger.warning("%s", message)
