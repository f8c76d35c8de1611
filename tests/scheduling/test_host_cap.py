"""The host cap holds for every batch width (issue 13, item 5).

One-call batches take the plain path, but under a host slot like any call:
six sessions each dispatching one call on `max_concurrency=2` never run more
than two at once, and two is reached.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from sched_probe import Probe, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken

pytestmark = pytest.mark.anyio


def _setup() -> tuple[Probe, tw.ToolRegistry]:
    probe = Probe()
    return probe, tw.ToolRegistry([probe.tool("read")])


async def test_six_one_call_sessions_share_two_slots() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2))
    results: dict[str, list[tw.ToolResult]] = {}

    async def session(key: str) -> None:
        results[key] = await dispatcher.dispatch(
            [tw.ToolCall("c0", "read", {"key": key})], reg, runner_for(reg)
        )

    async with anyio.create_task_group() as tg:
        for key in "abcdef":
            tg.start_soon(session, key)
        for _ in range(3):
            await anyio.wait_all_tasks_blocked()
            assert probe.inside == 2  # reached ...
            stats = dispatcher.statistics()
            assert stats.slots_in_use == 2 and stats.running == 2
            running = probe.started()[-2:]
            probe.release(*running)
    assert probe.peak == 2  # ... and never exceeded
    assert {k: [r.text for r in v] for k, v in results.items()} == {
        k: [f"read:{k}"] for k in "abcdef"
    }
    stats = dispatcher.statistics()
    assert (stats.running, stats.waiting, stats.slots_in_use) == (0, 0, 0)


async def test_one_call_sessions_and_wide_batches_share_the_cap() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=3))

    async def single(key: str) -> None:
        await dispatcher.dispatch(
            [tw.ToolCall("c0", "read", {"key": key})], reg, runner_for(reg)
        )

    async def wide() -> None:
        await dispatcher.dispatch(
            [tw.ToolCall(f"w{i}", "read", {"key": f"w{i}"}) for i in range(4)],
            reg,
            runner_for(reg),
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(wide)
        for key in "xyz":
            tg.start_soon(single, key)
        while len(probe.started()) < 7:
            await anyio.wait_all_tasks_blocked()
            assert probe.inside == 3
            probe.release(
                *[k for k in probe.started() if not probe.gate(k).is_set()][:1]
            )
        probe.release_all()
    assert probe.peak == 3


async def test_an_interrupt_stops_a_one_call_session_waiting_for_a_slot() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=1))
    token = InterruptToken()
    completed: list[str] = []
    waiting: list[tw.ToolResult] = []
    async with anyio.create_task_group() as tg:

        async def holder() -> None:
            await dispatcher.dispatch(
                [tw.ToolCall("h", "read", {"key": "h"})], reg, runner_for(reg)
            )

        async def waiter() -> None:
            waiting.extend(
                await dispatcher.dispatch(
                    [tw.ToolCall("w", "read", {"key": "w"})],
                    reg,
                    runner_for(reg),
                    on_completed=lambda c, r: completed.append(c.id),
                    interrupt=token,
                )
            )

        tg.start_soon(holder)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert dispatcher.statistics().waiting == 1
        token.set()
        await anyio.wait_all_tasks_blocked()
        assert [r.synthetic for r in waiting] == [True]
        assert "interrupted" in waiting[0].text and completed == ["w"]
        probe.release("h")
    assert probe.started() == ["h"]
    # already interrupted: answered without waiting at all
    out = await dispatcher.dispatch(
        [tw.ToolCall("x", "read", {"key": "x"})], reg, runner_for(reg), interrupt=token
    )
    assert out[0].synthetic and probe.started() == ["h"]


async def test_only_a_disabled_dispatcher_is_a_plain_loop_without_slots() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(enabled=False, max_concurrency=1))
    async with anyio.create_task_group() as tg:
        for key in "ab":
            tg.start_soon(
                dispatcher.dispatch,
                [tw.ToolCall("c", "read", {"key": key})],
                reg,
                runner_for(reg),
            )
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 2  # enabled=False: no host cap at all
        assert dispatcher.statistics().slots_in_use == 0
        probe.release_all()


async def test_an_interrupt_while_a_batch_waits_for_a_host_slot_leaks_nothing() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=1, per_batch_max=1))
    token = InterruptToken()
    waiting: list[tw.ToolResult] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            dispatcher.dispatch,
            [tw.ToolCall("h", "read", {"key": "h"})],
            reg,
            runner_for(reg),
        )
        await anyio.wait_all_tasks_blocked()

        async def batch() -> None:
            waiting.extend(
                await dispatcher.dispatch(
                    [
                        tw.ToolCall("a", "read", {"key": "a"}),
                        tw.ToolCall("b", "read", {"key": "b"}),
                    ],
                    reg,
                    runner_for(reg),
                    interrupt=token,
                )
            )

        tg.start_soon(batch)
        await anyio.wait_all_tasks_blocked()
        assert dispatcher.statistics().waiting == 2  # holding its batch slot only
        token.set()
        await anyio.wait_all_tasks_blocked()
        assert [r.synthetic for r in waiting] == [True, True]
        probe.release("h")
    assert probe.started() == ["h"]
    stats = dispatcher.statistics()
    assert (stats.running, stats.waiting, stats.slots_in_use) == (0, 0, 0)


@pytest.mark.parametrize("width", [1, 3])
async def test_repeated_ids_get_distinct_results_by_position(width: int) -> None:
    # The engine keys calls by position, never by id: models repeat ids.
    probe, reg = _setup()
    batch = [tw.ToolCall("call_0", "read", {"key": k}) for k in "abc"[:width]]
    pairs: list[tuple[str, str]] = []
    async with anyio.create_task_group() as tg:

        async def go() -> list[tw.ToolResult]:
            return await Dispatcher().dispatch(
                batch,
                reg,
                runner_for(reg),
                on_completed=lambda c, r: pairs.append((c.input["key"], r.text)),
            )

        out: list[tw.ToolResult] = []
        tg.start_soon(lambda: _collect(go, out))
        for key in reversed("abc"[:width]):  # finish in reverse order
            await anyio.wait_all_tasks_blocked()
            probe.release(key)
    assert [r.text for r in out] == [f"read:{k}" for k in "abc"[:width]]
    assert all(r.call_id == "call_0" for r in out)
    assert sorted(pairs) == [(k, f"read:{k}") for k in "abc"[:width]]


async def _collect(fn: Any, out: list[tw.ToolResult]) -> None:
    out.extend(await fn())
