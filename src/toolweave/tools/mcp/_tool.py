"""MCPTool: one tool of an MCP server, with honest concurrency and access declarations.

How a tool is declared, from the server's config and the tool's annotations
(annotations are hints from the server; `trusted` is the user's word):

| tool                                   | touches=None          | touches=K                |
|----------------------------------------|-----------------------|--------------------------|
| read-only (readOnlyHint, not destr.)   | SAFE, reads ``*``     | SAFE, reads K            |
| mutating, server not trusted           | SEQUENTIAL, barrier   | SEQUENTIAL, writes K     |
| mutating, server trusted               | SAFE, reads ``*``     | SAFE, writes K           |

Only a read-only tool of a *trusted* server may start while the model's response
still streams (`Warrant.USER`: you vouch for the server's annotations). An
untrusted server's ``readOnlyHint`` is a hint (the MCP specification: annotations
are untrusted unless they come from a trusted server): the tool overlaps as the
table says, but only inside a final response, so a response that is retried or
cut at ``max_tokens`` never ran it. A mutating tool of a trusted server claims
nothing read-only and never starts early either.

K is ``mcp:<server>`` plus the configured keys. Why not just ``mcp:<server>``:
a server's tools act on the world, not on the server. A git server's commit
changes the repository that a built-in ``read`` of ``fs:/repo/a.py`` observes,
so a key naming only the server would let the two overlap and the transcript
would depend on timing. Unless the config says what the server touches, a
read-only tool therefore reads everything (it waits for every earlier writer)
and a mutating one is a barrier (MCP is serial by default).
"""

from __future__ import annotations

import re
from typing import Any, final

import mcp.types as mt

from ..._exceptions import ToolError
from .._access import Access, Concurrency, Interrupt, Warrant
from .._context import ToolContext
from .._tool import AccessSpec
from ..manifest import JSONSchemaTool
from ._config import MCPServerConfig
from ._result import MCPContent, map_call_result
from ._server import MCPServer

__all__ = ["MCPTool", "is_read_only", "mcp_tool_name"]

_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def mcp_tool_name(server: str, tool: str) -> str:
    """The model-facing name ``mcp__<server>__<tool>``.

    Characters providers refuse in tool names are replaced by ``_``.
    """
    return f"mcp__{server}__{_NOT_NAME_CHARS.sub('_', tool)}"


def is_read_only(annotations: mt.ToolAnnotations | None) -> bool:
    """True if the annotations say read-only and do not also say destructive.

    Missing annotations mean "may write" (the MCP defaults: readOnlyHint false,
    destructiveHint true). A tool claiming both read-only and destructive
    contradicts itself and is taken as mutating (fail closed).
    """
    return (
        annotations is not None
        and annotations.read_only_hint is True
        and annotations.destructive_hint is not True
    )


def _access_spec(config: MCPServerConfig, *, read_only: bool) -> AccessSpec:
    """The Access every call of the tool claims, as a constant.

    A constant is also the tool's `Tool.bound_access`, so a sub-agent holding
    read-only MCP tools may still overlap with other calls.
    """
    if config.touches is None:
        return Access.read_all() if (read_only or config.trusted) else Access.barrier()
    keys = (f"mcp:{config.name}", *config.touches)
    return Access(reads=keys) if read_only else Access(writes=keys)


@final
class MCPTool(JSONSchemaTool):
    """A tool offered by an MCP server, exposed as ``mcp__<server>__<tool>``.

    Input is validated against the server's JSON schema before the call is sent.
    Readiness: while the server is not connected, `needs_prepare` is True and
    `prepare` starts it, so a cold start or a restart never holds a slot.
    A read-only tool is cancelled on interrupt (nothing is lost); a mutating one
    runs to its end so the transcript records what it did. Its output is
    replaceable: a PostToolUse hook's ``replace_output`` rewrites it, as Claude
    Code's ``updatedMCPToolOutput`` does (redacting what a server returned).
    """

    def __init__(self, server: MCPServer, listed: mt.Tool) -> None:
        config = server.config
        read_only = is_read_only(listed.annotations)
        safe = read_only or config.trusted
        super().__init__(
            name=mcp_tool_name(config.name, listed.name),
            description=listed.description or listed.title or listed.name,
            input_schema=listed.input_schema,
            concurrency=Concurrency.SAFE if safe else Concurrency.SEQUENTIAL,
            access=_access_spec(config, read_only=read_only),
            interrupt=Interrupt.CANCEL if read_only else Interrupt.BLOCK,
            timeout=config.timeout,
            replaceable_output=True,
            warrant=(
                Warrant.USER if read_only and config.trusted else Warrant.UNVOUCHED
            ),
        )
        self.server = server
        """The server that runs this tool."""
        self.remote_name = listed.name
        """The tool's name on the server."""
        self.annotations = listed.annotations
        """The server's hints about the tool, as listed."""
        self.read_only = read_only
        """The annotations say the tool changes nothing."""

    @property
    def needs_prepare(self) -> bool:
        """True while the server is not connected (first start, or after it died)."""
        return not self.server.ready

    async def prepare(self) -> None:
        """Start and initialise the server if needed (outside any slot).

        Raises:
            MCPConnectionError: the server did not start.
        """
        await self.server.connect()

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> MCPContent:
        """Call the tool on the server; its content is the result.

        The server's progress notifications are reported through `ctx`.

        Raises:
            ToolError: the server reported ``isError`` (its text is the message),
                answered with a protocol error, or its connection broke
                (`MCPConnectionError`).
        """
        result = await self.server.call_tool(
            self.remote_name, args, on_progress=ctx.report_progress
        )
        is_error, content = map_call_result(result)
        if is_error:
            text = (
                content
                if isinstance(content, str)
                else "\n".join(getattr(block, "text", "") for block in content)
            )
            raise ToolError(text or f"MCP tool {self.remote_name!r} reported an error")
        return content
