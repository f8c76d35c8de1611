"""Exceptions tell the truth (issue 13, item 7), through the Dispatcher alone.

A tool that raises a cancellation exception by itself is that call's error; a
KeyboardInterrupt or SystemExit reaches the dispatch's caller as itself, once
every call of the batch is answered (the answers ride on the exception).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from sched_probe import Probe, runner_for

import toolweave as tw
from toolweave.scheduling import (
    ConcurrencyConfig,
    Dispatcher,
    InterruptToken,
    results_of,
)

pytestmark = pytest.mark.anyio

POLICIES = ["all_or_nothing", "partition", "rwlock", "conflict"]


def _registry(probe: Probe, raise_: BaseException) -> tw.ToolRegistry:
    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def boom() -> str:
        """The boom test tool."""
        raise raise_

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def self_cancel() -> str:
        # on trio this is asyncio's exception type, raised by hand: still no cancel
        """The self_cancel test tool."""
        raise asyncio.CancelledError()

    return tw.ToolRegistry(
        [
            boom,
            self_cancel,
            probe.tool("read"),
            probe.tool("stop", interrupt=tw.Interrupt.CANCEL),
        ]
    )


@pytest.mark.parametrize("width", [1, 3])
async def test_a_tool_raising_cancelled_error_by_itself_is_an_error_result(
    width: int,
) -> None:
    probe = Probe()
    probe.release_all()
    reg = _registry(probe, RuntimeError("unused"))
    names = ["self_cancel", "read", "read"][:width]
    batch = [
        tw.ToolCall(f"c{i}", n, {"key": f"k{i}"} if n == "read" else {})
        for i, n in enumerate(names)
    ]
    for key in ("k1", "k2"):
        probe.release(key)
    out = await Dispatcher().dispatch(batch, reg, runner_for(reg))
    assert [r.call_id for r in out] == [c.id for c in batch]
    assert out[0].is_error and not out[0].synthetic
    assert "CancelledError" in out[0].text
    assert all(not r.is_error for r in out[1:])


async def test_cancelled_from_outside_sees_only_a_real_cancel() -> None:
    from toolweave._native.cancel import cancelled_from_outside

    assert not cancelled_from_outside()
    with anyio.CancelScope() as scope:
        scope.cancel()
        assert cancelled_from_outside()
        await anyio.lowlevel.checkpoint()


async def test_a_real_outer_cancel_still_cancels() -> None:
    probe = Probe()
    reg = _registry(probe, RuntimeError("unused"))
    batch = [
        tw.ToolCall("c0", "read", {"key": "a"}),
        tw.ToolCall("c1", "read", {"key": "b"}),
    ]
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def go() -> None:
                await Dispatcher().dispatch(batch, reg, runner_for(reg))
                raise AssertionError("dispatch returned under a cancel")

            tg.start_soon(go)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
    assert scope.cancelled_caught
    assert sorted(probe.started()) == ["a", "b"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
async def test_a_fatal_exception_reaches_the_caller_as_itself_after_all_are_answered(
    policy: str, fatal: type[BaseException]
) -> None:
    probe = Probe()
    raised = fatal("from the tool")
    reg = _registry(probe, raised)
    batch = [
        tw.ToolCall("c0", "read", {"key": "a"}),  # BLOCK: runs to its end
        tw.ToolCall("c1", "stop", {"key": "s"}),  # CANCEL: cancelled
        tw.ToolCall("c2", "boom", {}),
        tw.ToolCall("c3", "read", {"key": "late"}),
    ]
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=3, policy=policy))  # type: ignore[arg-type]
    caught: list[BaseException] = []

    async def go() -> None:
        try:
            await dispatcher.dispatch(
                batch, reg, runner_for(reg), interrupt=InterruptToken()
            )
        except fatal as exc:
            caught.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(go)
        await anyio.wait_all_tasks_blocked()
        probe.release("a")
    [exc] = caught
    assert exc is raised and type(exc) is fatal
    results = results_of(exc)
    assert results is not None
    assert [r.call_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert results[2].is_error and fatal.__name__ in results[2].text
    assert "late" not in probe.started()
    assert all(r.is_error for r in results[1:])
    stats = dispatcher.statistics()
    assert (stats.running, stats.waiting, stats.slots_in_use) == (0, 0, 0)


@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
async def test_a_fatal_exception_on_the_sequential_path(
    fatal: type[BaseException],
) -> None:
    probe = Probe()
    probe.release_all()
    reg = _registry(probe, fatal())
    batch = [tw.ToolCall("c0", "boom", {}), tw.ToolCall("c1", "read", {"key": "x"})]
    with pytest.raises(fatal) as info:
        await Dispatcher(ConcurrencyConfig(enabled=False)).dispatch(
            batch, reg, runner_for(reg)
        )
    results = results_of(info.value)
    assert results is not None and [r.call_id for r in results] == ["c0", "c1"]
    assert results[1].synthetic and "raised" in results[1].text
    assert probe.started() == []


async def test_a_fatal_exception_in_a_stream_is_raised_by_harvest() -> None:
    probe = Probe()
    reg = _registry(probe, SystemExit(3))

    async def stream_one() -> None:
        async with Dispatcher().open_stream(reg, runner_for(reg)) as stream:
            stream.submit(tw.ToolCall("c0", "boom", {}))
            stream.finish()
            await stream.harvest()

    with pytest.raises(SystemExit) as info:
        await stream_one()
    assert info.value.code == 3
    assert [r.call_id for r in results_of(info.value) or []] == ["c0"]


async def test_a_fatal_exception_of_a_discarded_attempt_still_surfaces() -> None:
    probe = Probe()
    reg = _registry(probe, SystemExit(4))

    async def stream_and_discard() -> None:
        async with Dispatcher().open_stream(reg, runner_for(reg)) as stream:
            stream.submit(tw.ToolCall("c0", "boom", {}))
            await anyio.wait_all_tasks_blocked()
            stream.discard()

    with pytest.raises(SystemExit):
        await stream_and_discard()


def test_results_of_is_none_for_an_exception_not_from_a_dispatch() -> None:
    exc: Any = KeyboardInterrupt()
    assert results_of(exc) is None
