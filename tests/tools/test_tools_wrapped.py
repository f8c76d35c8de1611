from __future__ import annotations

from typing import Any

import pytest

import toolweave as tw
from toolweave.tools import WrappedTool

pytestmark = pytest.mark.anyio


@tw.tool(
    concurrency=lambda a: a["n"] > 0,
    access=lambda a: tw.Access(reads=[f"k:{a['n']}"]),
    interrupt=tw.Interrupt.CANCEL,
    aliases=("c",),
)
def count(n: int) -> int:
    """Count.

    Args:
        n: How many.
    """
    return n


class Doubling(WrappedTool):
    async def call(self, args: dict[str, Any], ctx: tw.ToolContext) -> Any:
        return 2 * await super().call(args, ctx)


async def test_a_wrapped_tool_declares_what_its_inner_tool_declares() -> None:
    wrapped = Doubling(count)
    assert wrapped.anthropic_spec() == count.anthropic_spec()
    args = wrapped.parse({"n": "3"})
    assert args == {"n": 3}
    assert wrapped.concurrency_for(args) is tw.Concurrency.SAFE
    assert wrapped.concurrency_for({"n": -1}) is tw.Concurrency.SEQUENTIAL
    assert wrapped.access_for(args) == tw.Access(reads=["k:3"])
    assert (wrapped.interrupt, wrapped.aliases, wrapped.runs_in_thread) == (
        tw.Interrupt.CANCEL,
        ("c",),
        True,
    )
    assert (
        await wrapped.call(args, tw.ToolContext(tw.ToolCall("1", "count", args))) == 6
    )


def test_overrides_replace_declarations() -> None:
    assert Doubling(count, runs_in_thread=False).runs_in_thread is False
