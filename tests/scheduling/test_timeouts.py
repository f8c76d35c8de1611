"""A timeout bounds the wall clock (issue 13, item 3), at the Dispatcher's level.

Every call a Dispatcher runs is bounded by `default_tool_timeout` (or its tool's
own longer `timeout`), whatever the tool's `interrupt`, on every path; a worker
thread still running at the deadline is abandoned, counted, and capped.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.to_thread
import pytest
from sched_probe import patient_autojump, runner_for

import toolweave as tw
from toolweave._exceptions import ConfigError
from toolweave.scheduling import ConcurrencyConfig, Dispatcher

pytestmark = pytest.mark.anyio


def _virtual(anyio_backend: Any) -> bool:
    return anyio_backend != "asyncio"


def _ceiling(anyio_backend: Any) -> float:
    return 30.0 if _virtual(anyio_backend) else 0.3


def test_the_ceiling_is_a_documented_default_and_validated() -> None:
    assert ConcurrencyConfig().default_tool_timeout == 600.0
    assert ConcurrencyConfig().ceiling_for(None) == 600.0
    assert ConcurrencyConfig().ceiling_for(30.0) == 600.0
    assert (
        ConcurrencyConfig().ceiling_for(1200.0) == 1200.0
    )  # a longer own timeout wins
    assert ConcurrencyConfig(default_tool_timeout=None).ceiling_for(5.0) is None
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ConfigError):
            ConcurrencyConfig(default_tool_timeout=bad)
    with pytest.raises(ConfigError):
        ConcurrencyConfig(max_abandoned_threads=-1)


@pytest.mark.parametrize("path", ["batch", "single", "plain"])
@pytest.mark.parametrize("interrupt", [tw.Interrupt.BLOCK, tw.Interrupt.CANCEL])
async def test_a_call_that_never_returns_is_answered_at_the_ceiling(
    anyio_backend: Any, path: str, interrupt: tw.Interrupt
) -> None:
    ceiling = _ceiling(anyio_backend)

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=interrupt)
    async def hang(key: str) -> str:
        """The hang test tool."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def quick(key: str) -> str:
        """The quick test tool."""
        return key

    reg = tw.ToolRegistry([hang, quick])
    batch = [tw.ToolCall("h", "hang", {"key": "h"})]
    if path == "batch":
        batch.append(tw.ToolCall("q", "quick", {"key": "q"}))
    config = ConcurrencyConfig(default_tool_timeout=ceiling, enabled=path != "plain")
    start = anyio.current_time()
    out = await Dispatcher(config).dispatch(batch, reg, runner_for(reg))
    if _virtual(anyio_backend):
        assert anyio.current_time() - start == 30.0
    assert out[0].call_id == "h" and out[0].is_error and out[0].synthetic
    assert f"did not finish within {ceiling:g} s" in out[0].text
    assert [r.text for r in out[1:]] == (["q"] if path == "batch" else [])


async def test_a_tools_own_longer_timeout_beats_the_ceiling(anyio_backend: Any) -> None:
    if not _virtual(anyio_backend):
        pytest.skip("needs exact virtual time to tell 30 s from 60 s")

    @tw.tool(concurrency=tw.Concurrency.SAFE, timeout=60.0)
    async def patient() -> str:
        """The patient test tool."""
        await anyio.sleep(45)
        return "done"

    reg = tw.ToolRegistry([patient])
    config = ConcurrencyConfig(default_tool_timeout=30.0)
    out = await Dispatcher(config).dispatch(
        [tw.ToolCall("p", "patient", {})], reg, runner_for(reg)
    )
    assert out[0].text == "done"


async def test_a_sync_tool_past_the_ceiling_leaves_an_abandoned_thread_and_the_cap_serializes(
    anyio_backend: Any,
) -> None:
    ceiling = _ceiling(anyio_backend)
    release = threading.Event()
    inside = 0
    peak = 0
    lock = threading.Lock()
    both_in = threading.Barrier(2, timeout=0.5)

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    def stuck() -> str:
        """The stuck test tool."""
        release.wait(timeout=60)
        return "late"

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    def work(key: str) -> str:
        """The work test tool."""
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        try:
            both_in.wait()  # passes only if two run at once
        except threading.BrokenBarrierError:
            pass
        finally:
            with lock:
                inside -= 1
        return key

    reg = tw.ToolRegistry([stuck, work])
    dispatcher = Dispatcher(
        ConcurrencyConfig(default_tool_timeout=ceiling, max_abandoned_threads=1)
    )
    try:
        with patient_autojump():
            out = await dispatcher.dispatch(
                [tw.ToolCall("s", "stuck", {})], reg, runner_for(reg)
            )
        assert out[0].synthetic and "did not finish" in out[0].text
        stats = dispatcher.statistics()
        assert (stats.abandoned_threads, stats.abandoned_threads_total) == (1, 1)
        # at the cap: sync tools run exclusive (one after the other)
        log: list[str] = []
        nocap = ConcurrencyConfig(default_tool_timeout=None, max_abandoned_threads=1)
        dispatcher.config = nocap  # the barrier below needs real seconds
        out = await dispatcher.dispatch(
            [
                tw.ToolCall("a", "work", {"key": "a"}),
                tw.ToolCall("b", "work", {"key": "b"}),
            ],
            reg,
            runner_for(reg),
            on_started=lambda c: log.append(f"start {c.id}"),
            on_completed=lambda c, r: log.append(f"end {c.id}"),
        )
        assert [r.text for r in out] == ["a", "b"]
        assert log == ["start a", "end a", "start b", "end b"]
        assert peak == 1
    finally:
        release.set()
    host = dispatcher._host
    assert host is not None
    assert await anyio.to_thread.run_sync(host.threads.wait_abandoned_ended, 10)
    assert dispatcher.statistics().abandoned_threads == 0
    # below the cap again: the same pair overlaps
    both_in.reset()
    log2: list[str] = []
    out = await dispatcher.dispatch(
        [
            tw.ToolCall("a", "work", {"key": "a"}),
            tw.ToolCall("b", "work", {"key": "b"}),
        ],
        reg,
        runner_for(reg),
        on_started=lambda c: log2.append(f"start {c.id}"),
    )
    assert peak == 2 and log2 == ["start a", "start b"]


@pytest.mark.parametrize("path", ["batch", "single", "plain"])
async def test_a_call_that_returns_after_the_ceiling_is_still_timed_out(
    anyio_backend: Any, path: str
) -> None:
    """A shielded part outlives the ceiling; the call returns late: its output is
    withheld, its context change kept, as for a tool's own timeout (execute)."""
    ceiling = _ceiling(anyio_backend)
    changed: list[str] = []

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def stubborn() -> str:
        """The stubborn test tool."""
        return "never called: the runner below stands in for it"

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def quick(key: str) -> str:
        """The quick test tool."""
        return key

    reg = tw.ToolRegistry([stubborn, quick])
    plain = runner_for(reg)

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        if call.name != "stubborn":
            return await plain(call)
        with anyio.CancelScope(shield=True):
            await anyio.sleep(ceiling * 2)
        return tw.ToolResult(
            call.id, "late output", context_modifier=lambda: changed.append(call.id)
        )

    batch = [tw.ToolCall("s", "stubborn", {})]
    if path == "batch":
        batch.append(tw.ToolCall("q", "quick", {"key": "q"}))
    config = ConcurrencyConfig(default_tool_timeout=ceiling, enabled=path != "plain")
    out = await Dispatcher(config).dispatch(batch, reg, runner)
    assert out[0].is_error and out[0].synthetic
    assert "returned later, past the ceiling" in out[0].text
    assert "late output" not in out[0].text
    assert changed == ["s"]  # the work was done: its context change applies
    assert [r.text for r in out[1:]] == (["q"] if path == "batch" else [])
