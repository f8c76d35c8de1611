"""Opening the MCP SDK transport a config names."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp import StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ._config import MCPServerConfig

__all__ = ["open_transport"]


@asynccontextmanager
async def open_transport(config: MCPServerConfig) -> AsyncIterator[TransportStreams]:
    """Open the stdio or streamable-HTTP transport of `config`; yield (read, write).

    Exiting stops a stdio server (stdin closed, then SIGTERM/SIGKILL to its process
    group after the SDK's grace periods) or ends the HTTP session. The SDK shields
    that shutdown, so a cancelled caller never leaks a server process.

    A stdio server's output is decoded with ``errors="replace"``: under the SDK's
    default (strict), one byte that is not UTF-8 kills its reader task while the
    process lives on, and every call after it waits for its whole timeout. A bad
    byte inside a message becomes U+FFFD; a line it breaks is a parse error the
    session is told about (`Wire` sees it).

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
            encoding_error_handler="replace",
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
