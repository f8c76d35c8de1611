"""Progress and ToolRunning events, and shared per-session state under parallel calls."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from lifecycle_helpers import Events, call, dispatch, make_state, registry_with

from toolweave.events import Event, ToolProgress, ToolRunning
from toolweave.execution import (
    ExecutionConfig,
    Hooks,
    PermissionRules,
    PreToolUseInput,
    ToolRunner,
)
from toolweave.messages import ToolResult
from toolweave.tools import Access, Concurrency, ToolContext, tool

NO_TIMEOUT = ExecutionConfig(default_timeout=None)


@pytest.mark.anyio
async def test_progress_reaches_listeners_while_the_tool_still_runs(
    tmp_path: Path,
) -> None:
    release = anyio.Event()

    @tool
    async def work(ctx: ToolContext) -> str:
        """The work test tool."""
        ctx.report_progress("half way", 0.5)
        await release.wait()
        ctx.report_progress("nearly")
        return "done"

    events = Events()
    runner = ToolRunner(
        registry_with(work), state=make_state(tmp_path), on_event=events
    )
    results: list[ToolResult] = []

    async def drive() -> None:
        results.append(await runner(call("w", "work")))

    async with anyio.create_task_group() as tg:
        tg.start_soon(drive)
        await anyio.wait_all_tasks_blocked()
        assert [type(e) for e in events.items] == [ToolRunning, ToolProgress]
        assert events.items[1] == ToolProgress(
            "w", "half way", fraction=0.5, at=events.items[1].at
        )
        release.set()
    assert results == [ToolResult("w", "done")]
    assert [(e.message, e.fraction) for e in events.of(ToolProgress)] == [
        ("half way", 0.5),
        ("nearly", None),
    ]


@pytest.mark.anyio
async def test_progress_from_a_sync_tools_worker_thread(tmp_path: Path) -> None:
    reported = threading.Event()
    go = threading.Event()

    @tool
    def crunch(ctx: ToolContext) -> str:
        """The crunch test tool."""
        ctx.report_progress("crunching", 0.1)
        reported.set()
        go.wait(timeout=30)
        return "crunched"

    events = Events()
    runner = ToolRunner(
        registry_with(crunch),
        state=make_state(tmp_path),
        config=NO_TIMEOUT,
        on_event=events,
    )
    results: list[ToolResult] = []

    async def drive() -> None:
        results.append(await runner(call("c", "crunch")))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(drive)
            assert await anyio.to_thread.run_sync(reported.wait, 30)
            # delivered on the loop before report_progress returned in the thread
            assert [(e.call_id, e.message) for e in events.of(ToolProgress)] == [
                ("c", "crunching")
            ]
            assert results == []
            go.set()
    finally:
        go.set()
    assert results == [ToolResult("c", "crunched")]


@pytest.mark.anyio
async def test_progress_from_a_thread_the_tool_started(tmp_path: Path) -> None:
    @tool
    async def spawner(ctx: ToolContext) -> str:
        """The spawner test tool."""
        thread = threading.Thread(target=ctx.report_progress, args=("from my thread",))
        thread.start()
        await anyio.to_thread.run_sync(thread.join)
        return "joined"

    events = Events()
    runner = ToolRunner(
        registry_with(spawner),
        state=make_state(tmp_path),
        config=NO_TIMEOUT,
        on_event=events,
    )
    assert (await runner(call("s", "spawner"))).text == "joined"
    assert [e.message for e in events.of(ToolProgress)] == ["from my thread"]


@pytest.mark.anyio
async def test_progress_after_the_call_ended_is_dropped(tmp_path: Path) -> None:
    kept: list[ToolContext] = []

    @tool
    async def leaky(ctx: ToolContext) -> str:
        """The leaky test tool."""
        kept.append(ctx)
        return "ok"

    events = Events()
    runner = ToolRunner(
        registry_with(leaky), state=make_state(tmp_path), on_event=events
    )
    await runner(call("l", "leaky"))
    kept[0].report_progress("too late")
    assert events.of(ToolProgress) == []


@pytest.mark.anyio
async def test_a_raising_listener_breaks_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def listener(event: Event) -> None:
        raise RuntimeError("listener bug")

    @tool
    async def chatty(ctx: ToolContext) -> str:
        """The chatty test tool."""
        ctx.report_progress("hello")
        return "ok"

    runner = ToolRunner(
        registry_with(chatty), state=make_state(tmp_path), on_event=listener
    )
    with caplog.at_level(logging.ERROR, logger="toolweave.execution"):
        assert await runner(call("1", "chatty")) == ToolResult("1", "ok")
    assert [r.getMessage() for r in caplog.records] == [
        "event listener raised on ToolRunning",
        "event listener raised on ToolProgress",
    ]


@pytest.mark.anyio
async def test_tool_running_fires_only_when_the_tool_starts(tmp_path: Path) -> None:
    log: list[str] = []
    hooks = Hooks()

    @hooks.pre_tool_use
    def note(data: PreToolUseInput) -> None:
        log.append(f"hook {data.call.id}")

    def listener(event: Event) -> None:
        if isinstance(event, ToolRunning):
            log.append(f"running {event.call_id}")

    runner = ToolRunner(
        registry_with(),
        state=make_state(tmp_path),
        hooks=hooks,
        permissions=PermissionRules(deny=["shout"]),
        on_event=listener,
    )
    await runner(call("1", "echo", text="x"))
    await runner(call("2", "shout", text="x"))  # denied: never runs
    await runner(call("3", "nope"))  # unknown: never runs
    assert log == ["hook 1", "running 1", "hook 2"]


@pytest.mark.anyio
async def test_parallel_calls_record_reads_concurrently(tmp_path: Path) -> None:
    """The read-before-edit ledger is shared by parallel sync tools (seed 000 §5)."""
    width = 8
    barrier = threading.Barrier(width, timeout=30)

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access(reads=("fs:",)))
    def read(path: str, start: int, ctx: ToolContext) -> str:
        """The read test tool."""
        barrier.wait()  # every thread is here at once before any records
        for offset in range(start, start + 50):
            ctx.state.read_files.record(
                Path(path), mtime_ns=1, size=10, span=(offset, 1)
            )
        return f"read {path}"

    registry = registry_with(read)
    state = make_state(tmp_path)
    runner = ToolRunner(registry, state=state, config=NO_TIMEOUT)
    calls = [
        call(f"c{i}", "read", path=f"/f{i % 2}", start=i * 50) for i in range(width)
    ]
    results = await dispatch(runner, registry, calls)
    assert [r.text for r in results] == [f"read /f{i % 2}" for i in range(width)]
    for name, starts in (("/f0", range(0, width, 2)), ("/f1", range(1, width, 2))):
        record = state.read_files.get(Path(name))
        assert record is not None
        expected = {(o, 1) for s in starts for o in range(s * 50, s * 50 + 50)}
        assert record.ranges == expected  # not one span lost to a race
    assert len(state.read_files) == 2


@pytest.mark.anyio
async def test_progress_that_raced_the_end_of_the_call_is_dropped() -> None:
    from toolweave.execution._execute import ProgressReporter

    events = Events()
    reporter = ProgressReporter("r", events)
    reporter("before", None)
    reporter.close()
    reporter._emit("hopped to the loop just after the call ended", None)
    assert [e.message for e in events.of(ToolProgress)] == ["before"]
