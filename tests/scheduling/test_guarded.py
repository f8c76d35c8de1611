"""guarded(): a runner's answer is kept when it is this call's result, fixed when not."""

from __future__ import annotations

import dataclasses

import pytest

import toolweave as tw
from toolweave.scheduling._calls import guarded

pytestmark = pytest.mark.anyio

CALL = tw.ToolCall("c1", "t", {})


@dataclasses.dataclass(frozen=True, slots=True)
class _TaggedResult(tw.ToolResult):
    tag: str = "runner's own"


async def test_a_result_of_a_subclass_with_the_right_id_is_kept_as_it_is() -> None:
    result = _TaggedResult("c1", "ok")

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return result

    assert await guarded(runner, CALL) is result


async def test_a_result_for_another_id_is_given_this_calls_id() -> None:
    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return tw.ToolResult("other", "ok")

    fixed = await guarded(runner, CALL)
    assert fixed.call_id == "c1"
    assert fixed.text == "ok"


async def test_a_runner_that_returns_no_result_gives_an_error_result() -> None:
    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return "not a result"  # type: ignore[return-value]

    fixed = await guarded(runner, CALL)
    assert fixed.is_error and fixed.call_id == "c1"
