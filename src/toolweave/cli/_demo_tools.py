"""The demo's tools: the real built-in tools, each call padded with a fixed latency.

On a laptop the built-in tools finish in a millisecond, too fast to see what
overlapped. The demo adds a stated latency per call (as a remote sandbox or a
network file system would) *before* the real work; the declarations, the
scheduling and the work itself are untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any, final

import anyio

from ..tools import Access, Concurrency, PermissionCheck, Tool, ToolContext
from ..tools.builtin import coding_tools

__all__ = ["DEMO_LATENCY", "PaddedTool", "demo_tools"]

DEMO_LATENCY: Mapping[str, float] = {
    "read": 0.30,
    "grep": 0.40,
    "edit": 0.25,
    "bash": 0.30,
}
"""Seconds added to each call of these tools."""


@final
class PaddedTool(Tool):
    """Delegates everything to `inner`; `call` first sleeps `latency` seconds (anyio time)."""

    def __init__(self, inner: Tool, latency: float) -> None:
        super().__init__(
            name=inner.name,
            description=inner.description,
            input_model=inner.input_model,
            concurrency=inner.concurrency,
            access=inner.access,
            interrupt=inner.interrupt,
            timeout=inner.timeout,
            max_result_chars=inner.max_result_chars,
            aliases=inner.aliases,
            hidden=inner.hidden,
            abort_siblings_on_error=inner.abort_siblings_on_error,
            replaceable_output=inner.replaceable_output,
            runs_in_thread=inner.runs_in_thread,
        )
        self.inner = inner
        """The real tool."""
        self.latency = latency
        """Seconds added before each call."""

    def parse(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """As the inner tool."""
        return self.inner.parse(raw)

    def concurrency_for(self, args: dict[str, Any]) -> Concurrency:
        """As the inner tool."""
        return self.inner.concurrency_for(args)

    def access_for(self, args: dict[str, Any]) -> Access | None:
        """As the inner tool."""
        return self.inner.access_for(args)

    @property
    def needs_prepare(self) -> bool:
        """As the inner tool."""
        return self.inner.needs_prepare

    async def prepare(self) -> None:
        """As the inner tool."""
        await self.inner.prepare()

    async def validate_input(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> str | None:
        """As the inner tool."""
        return await self.inner.validate_input(args, ctx)

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        """As the inner tool."""
        return await self.inner.check_permissions(args, ctx)

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        """As the inner tool."""
        return self.inner.permission_subject(args)

    def input_schema(self) -> dict[str, Any]:
        """As the inner tool."""
        return self.inner.input_schema()

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
