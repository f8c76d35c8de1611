"""The demo's tools: the real built-in tools, each call padded with a fixed latency.

On a laptop the built-in tools finish in a millisecond, too fast to see what
overlapped. The demo adds a stated latency per call (as a remote sandbox or a
network file system would) *before* the real work; the declarations, the
scheduling and the work itself are untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, final

import anyio

from ...tools import Tool, ToolContext, WrappedTool
from ...tools.builtin import coding_tools

__all__ = ["DEMO_LATENCY", "PaddedTool", "demo_tools"]

DEMO_LATENCY: Mapping[str, float] = {
    "read": 0.30,
    "grep": 0.40,
    "edit": 0.25,
    "bash": 0.30,
}
"""Seconds added to each call of these tools."""


@final
class PaddedTool(WrappedTool):
    """Delegates everything to `inner`; `call` first sleeps `latency` seconds (anyio time)."""

    def __init__(self, inner: Tool, latency: float) -> None:
        super().__init__(inner)
        self.latency = latency
        """Seconds added before each call."""

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Wait `latency` seconds, then run the inner tool. A checkpoint."""
        await anyio.sleep(self.latency)
        return await self.inner.call(args, ctx)


def demo_tools(root: Path, latency: Mapping[str, float] = DEMO_LATENCY) -> list[Tool]:
    """`coding_tools(root)`, with the tools named in `latency` padded."""
    return [
        PaddedTool(t, latency[t.name]) if t.name in latency else t
        for t in coding_tools(root)
    ]
