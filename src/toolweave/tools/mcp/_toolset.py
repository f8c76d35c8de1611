"""open_mcp_servers: start a set of MCP servers and expose their tools."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import final

import anyio

from ..._exceptions import ConfigError, MCPConnectionError, ToolDefinitionError
from ._config import MCPServerConfig
from ._server import MCPServer
from ._tool import MCPTool

__all__ = ["MCPToolset", "open_mcp_servers"]

logger = logging.getLogger(__name__)


@final
class MCPToolset:
    """The connected servers of `open_mcp_servers` and the tools they offer.

    Valid only inside the ``async with`` block that produced it: on exit every
    server is shut down and its tools fail with `MCPConnectionError`.
    """

    def __init__(self, servers: Sequence[MCPServer]) -> None:
        self._servers = MappingProxyType({s.name: s for s in servers})
        tools: list[MCPTool] = []
        skipped: dict[str, str] = {}
        for server in servers:
            for listed in server.listed_tools:
                try:
                    tools.append(MCPTool(server, listed))
                except ToolDefinitionError as exc:
                    skipped[f"{server.name}/{listed.name}"] = str(exc)
                    logger.warning(
                        "skipping MCP tool %s/%s: %s", server.name, listed.name, exc
                    )
        _check_unique(tools)
        self.tools: tuple[MCPTool, ...] = tuple(tools)
        """Every usable tool of every server, server by server in config order."""
        self.skipped: Mapping[str, str] = MappingProxyType(skipped)
        """Tools left out (``server/tool`` -> why), such as an invalid input schema."""

    @property
    def servers(self) -> Mapping[str, MCPServer]:
        """The servers by name."""
        return self._servers

    def server(self, name: str) -> MCPServer:
        """The server called `name`.

        Raises:
            KeyError: no server has that name.
        """
        return self._servers[name]

    def __iter__(self) -> Iterator[MCPTool]:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)


def _check_unique(tools: Sequence[MCPTool]) -> None:
    seen: dict[str, MCPTool] = {}
    for tool in tools:
        other = seen.setdefault(tool.name, tool)
        if other is not tool:
            raise ConfigError(
                f"MCP tools {other.remote_name!r} and {tool.remote_name!r} of server"
                f" {tool.server.name!r} both become {tool.name!r}"
            )


async def _connect_all(servers: Sequence[MCPServer]) -> None:
    failures: list[MCPConnectionError] = []

    async def connect(server: MCPServer) -> None:
        try:
            await server.connect()
        except MCPConnectionError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        for server in servers:
            tg.start_soon(connect, server)
    if failures:
        error = MCPConnectionError("; ".join(str(f) for f in failures))
        error.__cause__ = failures[0].__cause__
        raise error


def _check_configs(configs: Sequence[MCPServerConfig]) -> None:
    names = [c.name for c in configs]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"two MCP servers are named {name!r}")


@asynccontextmanager
async def open_mcp_servers(
    configs: Iterable[MCPServerConfig],
) -> AsyncIterator[MCPToolset]:
    """Start every server (at once), list their tools, and yield them as a toolset.

    Each server runs in a task of a task group owned by this context, and is
    shut down when it exits (stdin closed, then its process group signalled).
    Exceptions from the block propagate unchanged (not wrapped in a group).

    Example:
        ```python
        time_server = MCPServerConfig(name="time", command="mcp-server-time")
        async with open_mcp_servers([time_server]) as mcp:
            registry = ToolRegistry([*coding_tools(root), *mcp.tools])
        ```

    Raises:
        ConfigError: two servers share a name, or two tools of one server map to
            the same tool name.
        MCPConnectionError: a server did not start; every server is shut down.
    """
    configs = list(configs)
    _check_configs(configs)
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        servers = [MCPServer(config, tg) for config in configs]
        try:
            await _connect_all(servers)
            toolset = MCPToolset(servers)
        except Exception as exc:
            failure = exc
        else:
            try:
                yield toolset
            except Exception as exc:
                failure = exc
        finally:
            for server in servers:
                server.close()
    if failure is not None:
        raise failure
