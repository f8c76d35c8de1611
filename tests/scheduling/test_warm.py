"""`warm`: a tool's declaration work is awaited before the gate, and never breaks it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import toolweave as tw
from toolweave.tools import WrappedTool


@tw.tool(concurrency=tw.Concurrency.SAFE, access=tw.Access())
def probe(text: str) -> str:
    """Echo.

    Args:
        text: What to echo.
    """
    return text


class _Warmed(WrappedTool):
    """`probe`, recording its warm-ups; raising when told to."""

    def __init__(self, seen: list[Mapping[str, Any]], fail: bool) -> None:
        super().__init__(probe)
        self.seen = seen
        self.fail = fail

    async def warm_declarations(self, raw_input: Mapping[str, Any]) -> None:
        self.seen.append(raw_input)
        if self.fail:
            raise RuntimeError("warm-up broke")


@pytest.mark.anyio
@pytest.mark.parametrize("fail", [False, True])
async def test_dispatch_warms_each_known_call_first(fail: bool) -> None:
    seen: list[Mapping[str, Any]] = []
    registry = tw.ToolRegistry([_Warmed(seen, fail)])
    calls = [
        tw.ToolCall("a", "probe", {"text": "1"}),
        tw.ToolCall("b", "nope", {}),  # unknown: nothing to warm
        tw.ToolCall("c", "probe", {}, raw_arguments="{not json"),  # unparsed: skipped
        tw.ToolCall("d", "probe", {"text": "2"}),
    ]

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return tw.ToolResult(call.id, "ran " + call.id)

    async with tw.Dispatcher(tw.ConcurrencyConfig()) as dispatcher:
        results = await dispatcher.dispatch(calls, registry, runner)
    assert seen == [{"text": "1"}, {"text": "2"}]
    assert [r.call_id for r in results] == ["a", "b", "c", "d"]
    assert results[0].text == "ran a" and results[3].text == "ran d"


def test_needs_warming_says_whether_there_is_anything_to_await(tmp_path: Any) -> None:
    """The Dispatcher awaits `warm` only for tools whose warm-up does something."""
    from toolweave.tools.builtin import BashTool

    assert not probe.needs_warming  # the default does nothing
    assert not WrappedTool(probe).needs_warming  # delegates
    assert _Warmed([], fail=False).needs_warming  # a subclass's own warm-up
    bash = BashTool(tmp_path)
    assert bash.needs_warming  # parses the command off the loop
    assert WrappedTool(bash).needs_warming
