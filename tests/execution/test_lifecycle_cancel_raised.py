"""A tool that raises CancelledError by itself gets an error result (issue 13, item 7)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest
from lifecycle_helpers import call, dispatch, make_state, registry_with

from toolweave.execution import ToolRunner
from toolweave.messages import ToolResult
from toolweave.tools import Concurrency, tool

pytestmark = pytest.mark.anyio


async def test_a_self_raised_cancelled_error_is_the_tools_error(tmp_path: Path) -> None:
    @tool(concurrency=Concurrency.SAFE)
    async def quits() -> str:
        """The quits test tool."""
        raise asyncio.CancelledError("I give up")

    registry = registry_with(quits)
    runner = ToolRunner(registry, state=make_state(tmp_path))
    results = await dispatch(
        runner, registry, [call("q", "quits"), call("e", "echo", text="fine")]
    )
    assert results == [
        ToolResult(
            "q",
            "CancelledError raised by the tool itself (nothing cancelled it)",
            is_error=True,
        ),
        ToolResult("e", "fine"),
    ]
    assert runner.statistics().errors == 1


async def test_a_real_cancel_still_propagates_out_of_the_runner(tmp_path: Path) -> None:
    entered = anyio.Event()

    @tool(concurrency=Concurrency.SAFE)
    async def waits() -> str:
        """The waits test tool."""
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = ToolRunner(registry_with(waits), state=make_state(tmp_path))
    outcome: list[object] = []
    async with anyio.create_task_group() as tg:

        async def go() -> None:
            outcome.append(await runner(call("w", "waits")))

        tg.start_soon(go)
        await entered.wait()
        tg.cancel_scope.cancel()
    assert outcome == []  # cancelled, not turned into a result
