"""Timeouts bound the wall clock: every tool is cut off, a worker thread is abandoned."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from lifecycle_helpers import (
    Events,
    call,
    dispatch,
    make_state,
    patient_autojump,
    registry_with,
)

from toolweave.events import Warning as WarningEvent
from toolweave.execution import ExecutionConfig, ToolRunner
from toolweave.execution._execute import EFFECTS_UNKNOWN_AFTER_TIMEOUT as UNKNOWN
from toolweave.messages import ToolResult
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools import Access, Concurrency, Interrupt, tool


def _limit(virtual_time: bool) -> float:
    """30 virtual seconds on trio (exact); 0.5 real s on asyncio (time for a worker
    thread to start on a loaded machine before the deadline)."""
    return 30.0 if virtual_time else 0.5


@pytest.mark.anyio
async def test_a_cancel_tool_is_cut_off_at_its_timeout(
    tmp_path: Path, virtual_time: bool
) -> None:
    limit = _limit(virtual_time)

    @tool(interrupt=Interrupt.CANCEL, timeout=limit, concurrency=Concurrency.SAFE)
    async def hang() -> str:
        """The hang test tool."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    registry = registry_with(hang)
    runner = ToolRunner(registry, state=make_state(tmp_path))
    start = anyio.current_time()
    results = await dispatch(
        runner, registry, [call("h", "hang"), call("e", "echo", text="fine")]
    )
    assert results == [
        ToolResult(
            "h", f"Tool 'hang' timed out after {limit:g} s." + UNKNOWN, is_error=True
        ),
        ToolResult("e", "fine"),
    ]
    if virtual_time:
        assert anyio.current_time() - start == 30.0
    stats = runner.statistics()
    assert (stats.timeouts, stats.errors, stats.threads_left) == (1, 1, 0)


@pytest.mark.anyio
async def test_a_block_tool_is_cut_off_at_its_timeout(
    tmp_path: Path, virtual_time: bool
) -> None:
    # issue 13 item 3: `interrupt=` governs user interrupts only; a timeout bounds
    # the wall clock whatever it says.
    limit = _limit(virtual_time)
    finished: list[str] = []

    @tool(timeout=limit)  # Interrupt.BLOCK is the default
    async def slow(seconds: float) -> str:
        """The slow test tool."""
        await anyio.sleep(seconds)
        finished.append("slow")
        return "done"

    runner = ToolRunner(registry_with(slow), state=make_state(tmp_path))
    start = anyio.current_time()
    late = await runner(call("s", "slow", seconds=10_000.0))
    assert finished == []  # it was cut off, not waited for
    assert late == ToolResult(
        "s", f"Tool 'slow' timed out after {limit:g} s." + UNKNOWN, is_error=True
    )
    if virtual_time:
        assert anyio.current_time() - start == 30.0
    on_time = await runner(call("t", "slow", seconds=limit / 4))
    assert on_time == ToolResult("t", "done")
    assert runner.statistics().timeouts == 1


@pytest.mark.anyio
async def test_the_config_default_applies_unless_the_tool_sets_its_own(
    tmp_path: Path, virtual_time: bool
) -> None:
    limit = _limit(virtual_time)

    @tool(interrupt=Interrupt.CANCEL)
    async def default_limited(seconds: float) -> str:
        """The default_limited test tool."""
        await anyio.sleep(seconds)
        return "ok"

    @tool(interrupt=Interrupt.CANCEL, timeout=limit * 4)
    async def own_limit(seconds: float) -> str:
        """The own_limit test tool."""
        await anyio.sleep(seconds)
        return "ok"

    registry = registry_with(default_limited, own_limit)
    config = ExecutionConfig(default_timeout=limit)
    runner = ToolRunner(registry, state=make_state(tmp_path), config=config)
    cut = await runner(call("1", "default_limited", seconds=limit * 2))
    assert cut.text == f"Tool 'default_limited' timed out after {limit:g} s." + UNKNOWN
    assert (await runner(call("2", "own_limit", seconds=limit * 2))).text == "ok"

    unlimited = ToolRunner(
        registry,
        state=make_state(tmp_path),
        config=ExecutionConfig(default_timeout=None),
    )
    long = 10_000.0 if virtual_time else limit * 2
    assert (await unlimited(call("3", "default_limited", seconds=long))).text == "ok"


@pytest.mark.anyio
@pytest.mark.parametrize("interrupt", [Interrupt.CANCEL, Interrupt.BLOCK])
async def test_a_hung_sync_tool_is_answered_at_its_deadline_and_its_thread_abandoned(
    tmp_path: Path, virtual_time: bool, interrupt: Interrupt
) -> None:
    limit = _limit(virtual_time)
    release = threading.Event()
    exited = threading.Event()

    @tool(
        interrupt=interrupt,
        timeout=limit,
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(),
    )
    def stuck() -> str:
        """The stuck test tool."""
        try:
            release.wait(timeout=60)
            return "too late"
        finally:
            exited.set()

    registry = registry_with(stuck)
    events = Events()
    runner = ToolRunner(registry, state=make_state(tmp_path), on_event=events)
    dispatcher = Dispatcher(ConcurrencyConfig(default_tool_timeout=None))
    try:
        start = anyio.current_time()
        with patient_autojump():  # let the thread start before the deadline
            results = await dispatcher.dispatch(
                [call("s", "stuck"), call("e", "echo", text="unaffected")],
                registry,
                runner,
            )
        if virtual_time:
            assert anyio.current_time() - start == 30.0
        # the thread is still running: it was abandoned, not joined
        assert not exited.is_set()
        stats = dispatcher.statistics()
        assert (stats.abandoned_threads, stats.abandoned_threads_total) == (1, 1)
    finally:
        release.set()
    assert await anyio.to_thread.run_sync(exited.wait, 10)
    host = dispatcher._host
    assert host is not None
    assert await anyio.to_thread.run_sync(host.threads.wait_abandoned_ended, 10)
    stats = dispatcher.statistics()
    assert (stats.abandoned_threads, stats.abandoned_threads_total) == (0, 1)
    assert results[1] == ToolResult("e", "unaffected")
    assert results[0] == ToolResult(
        "s",
        f"Tool 'stuck' timed out after {limit:g} s. It ran on a worker thread, which"
        " cannot be stopped; the thread was abandoned and may still finish its work."
        + UNKNOWN,
        is_error=True,
    )
    assert runner.statistics().threads_left == 1
    [warning] = events.of(WarningEvent)
    assert warning.message == f"call s (stuck): {results[0].text}"


@pytest.mark.anyio
async def test_outer_cancellation_propagates(tmp_path: Path) -> None:
    @tool(interrupt=Interrupt.CANCEL)
    async def forever() -> str:
        """The forever test tool."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = ToolRunner(
        registry_with(forever),
        state=make_state(tmp_path),
        config=ExecutionConfig(default_timeout=None),
    )
    got: list[ToolResult] = []

    async def drive() -> None:
        got.append(await runner(call("f", "forever")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(drive)
        await anyio.wait_all_tasks_blocked()
        tg.cancel_scope.cancel()
    assert got == []  # no fake result: the Dispatcher writes the synthetic one
    assert runner.statistics().calls == 1
