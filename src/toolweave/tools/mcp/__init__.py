"""MCP tools: servers over stdio or streamable HTTP, their tools as `mcp__<server>__<tool>`."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from ._config import MCPServerConfig as MCPServerConfig

if TYPE_CHECKING:
    from ._result import map_call_result as map_call_result
    from ._server import MCPServer as MCPServer
    from ._server import MCPServerStatistics as MCPServerStatistics
    from ._tool import MCPTool as MCPTool
    from ._tool import is_read_only as is_read_only
    from ._tool import mcp_tool_name as mcp_tool_name
    from ._toolset import MCPToolset as MCPToolset
    from ._toolset import open_mcp_servers as open_mcp_servers

# The `mcp` SDK (seconds to import) loads on first use; the config does not need it.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "map_call_result": "._result",
        "MCPServer": "._server",
        "MCPServerStatistics": "._server",
        "MCPTool": "._tool",
        "is_read_only": "._tool",
        "mcp_tool_name": "._tool",
        "MCPToolset": "._toolset",
        "open_mcp_servers": "._toolset",
    },
)

__all__ = [
    "MCPServer",
    "MCPServerConfig",
    "MCPServerStatistics",
    "MCPTool",
    "MCPToolset",
    "is_read_only",
    "map_call_result",
    "mcp_tool_name",
    "open_mcp_servers",
]
