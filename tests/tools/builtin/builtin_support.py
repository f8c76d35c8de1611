"""Helpers shared by the built-in tool tests (a unique name: conftest modules collide)."""

from __future__ import annotations

from typing import Any

from toolweave.messages import ToolCall
from toolweave.tools import SessionState, Tool, ToolContext


async def run(tool: Tool, raw: dict[str, Any], state: SessionState) -> Any:
    """Validate `raw` and call `tool` the way the lifecycle does."""
    args = tool.parse(raw)
    ctx = ToolContext(ToolCall(f"call-{tool.name}", tool.name, raw), state=state)
    return await tool.call(args, ctx)
