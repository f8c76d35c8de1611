"""A small real MCP server (the SDK's MCPServer) for the MCP tests.

Run as ``python mcp_test_server.py stdio [REFUSE_IF]`` or
``python mcp_test_server.py http PORT``. With REFUSE_IF, the server exits at once
(status 3) while that file exists: a server that cannot start.
Not a mock: it is the official SDK server, speaking MCP over a real transport.
It adds what the reference servers lack: a server-side rendezvous that proves one
client session carries concurrent requests, images, structured-only results and
tool-reported errors.
"""

from __future__ import annotations

import base64
import os
import sys

import anyio
import mcp.types as mt
from mcp.server.mcpserver import Context, MCPServer

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

READ_ONLY = mt.ToolAnnotations(read_only_hint=True, destructive_hint=False)
ADDITIVE = mt.ToolAnnotations(read_only_hint=False, destructive_hint=False)
DESTRUCTIVE = mt.ToolAnnotations(read_only_hint=False, destructive_hint=True)

server = MCPServer("toolweave-test")
notes: list[str] = []
arrived: dict[str, int] = {}
met: dict[str, anyio.Event] = {}


@server.tool(annotations=READ_ONLY)
async def rendezvous(key: str, party: int) -> str:
    """Return only once `party` calls with this `key` are in progress at once."""
    arrived[key] = arrived.get(key, 0) + 1
    event = met.setdefault(key, anyio.Event())
    if arrived[key] >= party:
        event.set()
    with anyio.fail_after(30):
        await event.wait()
    return f"met {party} at {key}"


@server.tool(annotations=READ_ONLY)
async def count_to(n: int, ctx: Context) -> str:
    """Count to `n`, reporting progress at each step."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"counted to {n}"


@server.tool(annotations=READ_ONLY)
def list_notes() -> str:
    """The notes so far, one per line."""
    return "\n".join(notes)


@server.tool(annotations=ADDITIVE)
def add_note(text: str) -> str:
    """Append a note."""
    notes.append(text)
    return f"{len(notes)} notes"


@server.tool(annotations=DESTRUCTIVE)
def clear_notes() -> str:
    """Delete every note."""
    notes.clear()
    return "cleared"


@server.tool()
def unannotated() -> str:
    """A tool without annotations (the MCP defaults: may write, destructive)."""
    return "done"


@server.tool(annotations=READ_ONLY)
def picture() -> mt.CallToolResult:
    """A caption and a picture."""
    data = base64.b64encode(PNG).decode()
    return mt.CallToolResult(
        content=[
            mt.TextContent(text="a pixel"),
            mt.ImageContent(data=data, mime_type="image/png"),
        ]
    )


@server.tool(annotations=READ_ONLY)
def structured_only() -> mt.CallToolResult:
    """A result with structured content and no text."""
    return mt.CallToolResult(content=[], structured_content={"answer": 42})


@server.tool(annotations=READ_ONLY)
def fails(reason: str) -> mt.CallToolResult:
    """A tool that reports an error."""
    return mt.CallToolResult(content=[mt.TextContent(text=reason)], is_error=True)


def main() -> None:
    if sys.argv[1] == "stdio":
        if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
            sys.exit(3)
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
