"""Opening the MCP SDK transport a config names, and noticing when it ends."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Generic, TypeVar

import anyio
from mcp import StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream

from ._config import MCPServerConfig

__all__ = ["WatchedReadStream", "open_transport"]

T = TypeVar("T")


class WatchedReadStream(Generic[T]):
    """A read stream that calls `on_end` once when the server side ends it.

    The SDK's session does not say when its peer went away; the read stream's
    end of stream does (a stdio server's stdout closes when it exits). Wrapping
    the stream the session reads lets the connection notice a dead server at
    once, not only when the next request fails.
    """

    def __init__(self, inner: ReadStream[T], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end: Callable[[], None] | None = on_end

    def _ended(self) -> None:
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end()

    async def receive(self) -> T:
        """Receive the next item; at end of stream, report the end and re-raise."""
        try:
            return await self._inner.receive()
        except (
            anyio.EndOfStream,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        ):
            self._ended()
            raise

    def __aiter__(self) -> WatchedReadStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReadStream[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def open_transport(config: MCPServerConfig) -> AsyncIterator[TransportStreams]:
    """Open the stdio or streamable-HTTP transport of `config`; yield (read, write).

    Exiting stops a stdio server (stdin closed, then SIGTERM/SIGKILL to its process
    group after the SDK's grace periods) or ends the HTTP session. The SDK shields
    that shutdown, so a cancelled caller never leaks a server process.

    Raises:
        OSError: the stdio command could not be started.
    """
    if config.transport == "stdio":
        assert config.command is not None  # checked by MCPServerConfig
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=dict(config.env) if config.env is not None else None,
            cwd=config.cwd,
        )
        async with stdio_client(params, errlog=sys.stderr) as streams:
            yield streams
        return
    assert config.url is not None  # checked by MCPServerConfig
    headers = dict(config.headers) if config.headers is not None else None
    async with (
        create_mcp_http_client(headers=headers) as http_client,
        streamable_http_client(config.url, http_client=http_client) as streams,
    ):
        yield streams
