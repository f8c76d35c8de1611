"""MCPServerConfig: how to reach one MCP server and how far to trust it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from ..._exceptions import ConfigError

__all__ = ["MCPServerConfig"]

_SERVER_NAME = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")


def _frozen(mapping: Mapping[str, str] | None) -> Mapping[str, str] | None:
    return None if mapping is None else MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPServerConfig:
    """One MCP server: its transport, its trust, the resources its tools act on.

    A stdio server is a subprocess (``command`` + ``args``) speaking MCP on its
    stdin/stdout; an ``http`` server is reached over streamable HTTP at ``url``.
    Its tools are exposed as ``mcp__<name>__<tool>``.

    Raises:
        ConfigError: a field is missing for the transport, present for the other
            one, or out of range; or `name` cannot be part of a tool name.
    """

    name: str
    """Server name, used in tool names: letters, digits, ``-`` and single ``_``."""
    transport: Literal["stdio", "http"] = "stdio"
    """``stdio`` (a subprocess) or ``http`` (streamable HTTP)."""
    command: str | None = None
    """stdio: the executable that starts the server."""
    args: tuple[str, ...] = ()
    """stdio: its arguments."""
    env: Mapping[str, str] | None = None
    """stdio: extra environment variables, over the SDK's safe default set."""
    cwd: str | Path | None = None
    """stdio: the server's working directory."""
    url: str | None = None
    """http: the streamable-HTTP endpoint, such as ``http://127.0.0.1:8000/mcp``."""
    headers: Mapping[str, str] | None = None
    """http: headers sent with every request (authentication, for instance)."""
    trusted: bool = False
    """You vouch for this server: its annotations are taken at your word.

    Trusted, every tool of the server is SAFE whatever its annotations say, and
    its read-only tools (``readOnlyHint: true``, not ``destructiveHint: true``)
    may start while the model's response still streams. Untrusted (the
    default), a tool is SAFE only if its annotations say read-only (as in
    Codex), and it starts only once the response is final: the MCP
    specification holds annotations untrusted unless the server is, and a
    response that is then retried or cut at ``max_tokens`` must not have run a
    tool on a hint.
    """
    touches: tuple[str, ...] | None = None
    """Resource keys the server's tools act on, such as ``("fs:/abs/repo",)``.

    None means unknown: read-only tools then read everything and mutating tools
    are barriers under the ``conflict`` policy. Given, read-only tools read these
    keys plus ``mcp:<name>`` and mutating tools write them.
    """
    timeout: float | None = None
    """Seconds one tool call may take (the tool's timeout); None = config default."""
    startup_timeout: float = 60.0
    """Seconds to start the server, initialise the session and list its tools."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "env", _frozen(self.env))
        object.__setattr__(self, "headers", _frozen(self.headers))
        object.__setattr__(self, "args", tuple(self.args))
        if self.touches is not None:
            object.__setattr__(self, "touches", tuple(self.touches))
        self._check_name()
        self._check_transport()
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigError(f"MCP server {self.name!r}: timeout must be positive")
        if self.startup_timeout <= 0:
            raise ConfigError(
                f"MCP server {self.name!r}: startup_timeout must be positive"
            )

    def _check_name(self) -> None:
        if not _SERVER_NAME.match(self.name):
            raise ConfigError(
                f"MCP server name {self.name!r} must be letters, digits, '-' and single"
                " '_' (it becomes part of the tool names mcp__<server>__<tool>)"
            )

    def _check_transport(self) -> None:
        where = f"MCP server {self.name!r}"
        stdio_only = {
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "cwd": self.cwd,
        }
        http_only = {"url": self.url, "headers": self.headers}
        if self.transport == "stdio":
            if not self.command:
                raise ConfigError(f"{where}: transport 'stdio' needs command")
            stray = [k for k, v in http_only.items() if v]
        elif self.transport == "http":
            if not self.url or not self.url.startswith(("http://", "https://")):
                raise ConfigError(f"{where}: transport 'http' needs an http(s) url")
            stray = [k for k, v in stdio_only.items() if v]
        else:
            raise ConfigError(
                f"{where}: transport must be 'stdio' or 'http', got {self.transport!r}"
            )
        if stray:
            raise ConfigError(
                f"{where}: {', '.join(stray)} do not apply to transport {self.transport!r}"
            )
