"""A finished dispatch leaves no reference cycle: its batch is freed by reference counts.

A cycle through a batch (a callback that is the batch's own method, kept by
something the batch keeps) leaves every call's records, tasks and results to
the garbage collector: memory that is not reused at once, and collector time.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from sched_probe import runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken

pytestmark = pytest.mark.anyio


@tw.tool(concurrency=tw.Concurrency.SAFE)
async def read(key: str) -> str:
    """The read test tool."""
    return key


@tw.tool(access=lambda args: tw.Access(writes=("k",)))
async def write(key: str) -> str:
    """The write test tool."""
    return key


REG = tw.ToolRegistry([read, write])


def _ours(garbage: list[Any]) -> list[str]:
    return sorted(
        {
            type(o).__qualname__
            for o in garbage
            if type(o).__module__.startswith("toolweave")
        }
    )


@pytest.mark.parametrize("token", [False, True])
@pytest.mark.parametrize("ceiling", [None, 600.0])
async def test_a_dispatch_leaves_no_cycle(
    anyio_backend: Any, token: bool, ceiling: float | None
) -> None:
    calls = [
        tw.ToolCall("a", "read", {"key": "a"}),
        tw.ToolCall("b", "read", {"key": "b"}),
        tw.ToolCall("w", "write", {"key": "w"}),
        tw.ToolCall("c", "read", {"key": "c"}),
        tw.ToolCall("x", "missing", {}),
    ]
    dispatcher = Dispatcher(
        ConcurrencyConfig(default_tool_timeout=ceiling, per_batch_max=2)
    )
    await dispatcher.dispatch(calls, REG, runner_for(REG))  # warm caches first
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        out = await dispatcher.dispatch(
            calls, REG, runner_for(REG), interrupt=InterruptToken() if token else None
        )
        gc.collect()
        leaked = _ours(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert [r.call_id for r in out] == ["a", "b", "w", "c", "x"]
    assert leaked == []
