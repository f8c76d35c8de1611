"""The SDK stream objects a provider model reads, and two of our own with the same shape.

- `SDKStream`: what we need of an SDK's async stream (iterate, close).
- `ReplayStream`: a whole (non-streamed) response as the events its stream
  would have carried, so it goes through the stream mapper unchanged;
  `replay_of` builds one and reports a body it cannot read (the SDKs do not
  validate: a JSON string, a list or an object missing its fields arrives as
  it came) as `ModelServerError`, like a malformed stream event.
- `peek`: read a live stream's first event ahead, to tell "the server gave up
  before sending anything" from a stream that started, without losing it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from typing import Any, Protocol, final

import anyio

from .._exceptions import ModelServerError

__all__ = [
    "MALFORMED",
    "PeekedStream",
    "ReplayStream",
    "SDKStream",
    "peek",
    "replay_of",
    "stream_url",
]

MALFORMED = (AttributeError, TypeError, KeyError, IndexError, ValueError)
"""What reading an SDK object raises when its fields are missing or of the wrong type."""


class SDKStream(Protocol):
    """What we need of an SDK's async stream object."""

    def __aiter__(self) -> AsyncIterator[Any]: ...

    async def close(self) -> None:
        """Release the HTTP response."""


@final
class ReplayStream:
    """A whole response as the SDK events a stream of it would have carried.

    Holds no connection, so `close` has nothing to release.
    """

    def __init__(self, events: Iterable[Any]) -> None:
        self._events = list(events)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._replay()

    async def _replay(self) -> AsyncIterator[Any]:
        for event in self._events:
            yield event

    async def close(self) -> None:
        """Nothing to release (the HTTP response was read whole)."""


def replay_of(
    convert: Callable[[Any], Iterable[Any]], body: Any, provider: str
) -> ReplayStream:
    """`body` (a whole response) replayed as events by `convert`.

    Raises `ModelServerError` naming `provider` if the body cannot be read.
    """
    try:
        return ReplayStream(convert(body))
    except MALFORMED as exc:
        raise ModelServerError(
            f"the {provider} provider sent a malformed response:"
            f" {type(exc).__name__}: {exc}"[:500]
        ) from exc


def stream_url(stream: object) -> str | None:
    """The URL a live SDK stream reads from (its public ``response``); None for a replay."""
    response = getattr(stream, "response", None)
    url = getattr(response, "url", None)
    return None if url is None else str(url)


@final
class PeekedStream:
    """A live stream whose first event was read ahead; iterating yields it first."""

    def __init__(
        self, stream: SDKStream, iterator: AsyncIterator[Any], first: Any
    ) -> None:
        self._stream = stream
        self._iterator = iterator
        self._first = first

    @property
    def response(self) -> object:
        """The underlying SDK stream's HTTP response (for `stream_url`)."""
        return getattr(self._stream, "response", None)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events()

    async def _events(self) -> AsyncIterator[Any]:
        yield self._first
        async for event in self._iterator:
            yield event

    async def close(self) -> None:
        """Close the read-ahead iterator and release the HTTP response."""
        await _close_iterator(self._iterator)
        await self._stream.close()


async def peek(stream: SDKStream) -> PeekedStream | None:
    """`stream` with its first event read ahead, or None if it ended without one.

    An empty stream is closed here. A checkpoint (waits for the first event);
    raises what the SDK raises on reading it, the stream closed first.
    """
    iterator = aiter(stream)
    try:
        first = await anext(iterator)
    except StopAsyncIteration:
        await _release(stream, iterator)
        return None
    except BaseException:
        await _release(stream, iterator)
        raise
    return PeekedStream(stream, iterator, first)


async def _release(stream: SDKStream, iterator: AsyncIterator[Any]) -> None:
    with anyio.CancelScope(shield=True):
        await _close_iterator(iterator)
        await stream.close()


async def _close_iterator(iterator: AsyncIterator[Any]) -> None:
    if isinstance(iterator, AsyncGenerator):
        await iterator.aclose()
