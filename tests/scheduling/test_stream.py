from __future__ import annotations

from typing import Any

import anyio
import pytest
from sched_probe import Probe, calls, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher

pytestmark = pytest.mark.anyio


def _setup() -> tuple[Probe, tw.ToolRegistry]:
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool(
                "read",
                interrupt=tw.Interrupt.CANCEL,
                access=lambda a: tw.Access(reads=[f"k:{a['key']}"]),
            ),
            probe.tool("slowread"),  # BLOCK
            probe.tool(
                "edit",
                concurrency=tw.Concurrency.SEQUENTIAL,
                access=lambda a: tw.Access(writes=[f"k:{a['key']}"]),
            ),
        ]
    )
    return probe, reg


async def test_safe_calls_start_while_the_response_streams() -> None:
    probe, reg = _setup()
    started: list[str] = []
    async with Dispatcher().open_stream(
        reg, runner_for(reg), on_started=lambda c: started.append(c.id)
    ) as stream:
        batch = calls(("read", "a"), ("read", "b"), ("edit", "a"), ("read", "c"))
        stream.submit(batch[0])
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a"]  # before the response is final
        stream.submit(batch[1])
        stream.submit(batch[2])  # not SAFE: holds itself and everything after it
        stream.submit(batch[3])
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a", "b"] and started == ["c0", "c1"]
        stream.finish()
        await anyio.wait_all_tasks_blocked()
        # conflict policy: edit of a waits for the read of a, outside any slot
        # and before on_started; read c needs no wait, so it starts first
        assert started == ["c0", "c1", "c3"]
        assert probe.started() == ["a", "b", "c"]
        probe.release("a", "b", "c")
        await anyio.wait_all_tasks_blocked()
        assert started == ["c0", "c1", "c3", "c2"]
        assert probe.started() == ["a", "b", "c", "a"]
        probe.release("a")
        results = await stream.harvest()
    assert [r.call_id for r in results] == ["c0", "c1", "c2", "c3"]
    assert [r.is_error for r in results] == [False] * 4


async def test_stream_and_dispatch_give_identical_results_and_start_order() -> None:
    async def run(streamed: bool) -> tuple[list[tw.ToolResult], list[str]]:
        probe, reg = _setup()
        for key in "abcde":
            probe.release(key)
        started: list[str] = []
        batch = calls(
            ("read", "a"), ("edit", "b"), ("read", "c"), ("nope", "x"), ("read", "e")
        )
        dispatcher = Dispatcher()
        if not streamed:
            out = await dispatcher.dispatch(
                batch, reg, runner_for(reg), on_started=lambda c: started.append(c.id)
            )
            return out, started
        async with dispatcher.open_stream(
            reg, runner_for(reg), on_started=lambda c: started.append(c.id)
        ) as stream:
            for call in batch:
                stream.submit(call)
                await anyio.wait_all_tasks_blocked()
            stream.finish()
            return await stream.harvest(), started

    assert await run(True) == await run(False)


async def test_discard_cancels_eager_cancel_calls_and_lets_block_calls_finish() -> None:
    probe, reg = _setup()
    completed: dict[str, tw.ToolResult] = {}
    discarded = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def attempt() -> None:
            async with Dispatcher().open_stream(
                reg,
                runner_for(reg),
                on_completed=lambda c, r: completed.__setitem__(c.id, r),
            ) as stream:
                for call in calls(("read", "a"), ("slowread", "b"), ("edit", "c")):
                    stream.submit(call)
                await probe.entered_event("a").wait()
                await probe.entered_event("b").wait()
                stream.discard()
                discarded.set()
                with pytest.raises(tw.UsageError):
                    await stream.harvest()

        tg.start_soon(attempt)
        await discarded.wait()
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 1  # the BLOCK read still runs; the CANCEL one stopped
        probe.release("b")
    assert completed["c0"].synthetic
    assert completed["c1"].content == "slowread:b"
    assert "c2" not in completed  # never started, never reported
    assert "start c" not in probe.log


async def test_leaving_without_harvest_discards() -> None:
    probe, reg = _setup()
    async with Dispatcher().open_stream(reg, runner_for(reg)) as stream:
        stream.submit(calls(("read", "a"))[0])
        await anyio.wait_all_tasks_blocked()
    assert stream.discarded and probe.inside == 0


@pytest.mark.parametrize(
    "config",
    [
        ConcurrencyConfig(streaming_overlap=False),
        ConcurrencyConfig(enabled=False),
        ConcurrencyConfig(policy="all_or_nothing"),
    ],
)
async def test_nothing_starts_early_without_overlap(config: ConcurrencyConfig) -> None:
    probe, reg = _setup()
    for key in "ab":
        probe.release(key)
    async with Dispatcher(config).open_stream(reg, runner_for(reg)) as stream:
        for call in calls(("read", "a"), ("read", "b")):
            stream.submit(call)
        await anyio.wait_all_tasks_blocked()
        assert probe.log == []
        results = await stream.harvest()
    assert [r.content for r in results] == ["read:a", "read:b"]


async def test_submit_after_finish_is_a_usage_error() -> None:
    _, reg = _setup()
    async with Dispatcher().open_stream(reg, runner_for(reg)) as stream:
        stream.finish()
        with pytest.raises(tw.UsageError):
            stream.submit(calls(("read", "a"))[0])
        assert await stream.harvest() == []


async def test_interrupt_during_a_stream(anyio_backend: Any) -> None:
    probe, reg = _setup()
    token = tw.InterruptToken()
    async with Dispatcher().open_stream(
        reg, runner_for(reg), interrupt=token
    ) as stream:
        for call in calls(("read", "a"), ("slowread", "b"), ("edit", "c")):
            stream.submit(call)
        await anyio.wait_all_tasks_blocked()
        token.set()
        probe.release("b")
        results = await stream.harvest()
    assert results[0].synthetic and "Cancelled" in results[0].text
    assert results[1].content == "slowread:b"
    assert results[2].synthetic and "Not run" in results[2].text
