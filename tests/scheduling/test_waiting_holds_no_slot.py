"""A waiting call holds no slot (issue 13, item 5).

Under every policy (the issue names `conflict` and `rwlock`, where waiting used
to happen *inside* a slot) a call blocked on its dependencies takes no host
slot; it takes one only once ready, and ready calls go in call order.
"""

from __future__ import annotations

import anyio
import pytest
from sched_probe import Probe, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher

pytestmark = pytest.mark.anyio

POLICIES = ["all_or_nothing", "partition", "rwlock", "conflict"]


def _setup() -> tuple[Probe, tw.ToolRegistry]:
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool("read", access=lambda a: tw.Access(reads=[f"k:{a['key']}"])),
            probe.tool(
                "write",
                concurrency=tw.Concurrency.SEQUENTIAL,
                access=lambda a: tw.Access(writes=[f"k:{a['key']}"]),
            ),
        ]
    )
    return probe, reg


@pytest.mark.parametrize("policy", ["rwlock", "conflict"])
async def test_a_slow_barrier_in_one_session_does_not_starve_another(
    policy: str,
) -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2, policy=policy))  # type: ignore[arg-type]
    # session 1: a write, then reads that wait for it (rwlock: every read after
    # an exclusive call; conflict: the reads of the same key)
    first = [
        tw.ToolCall("w", "write", {"key": "a"}),
        tw.ToolCall("r1", "read", {"key": "a"}),
        tw.ToolCall("r2", "read", {"key": "a"}),
    ]
    other: list[tw.ToolResult] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(dispatcher.dispatch, first, reg, runner_for(reg))
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a"]  # the write; both reads wait without a slot
        stats = dispatcher.statistics()
        assert (stats.slots_in_use, stats.running, stats.waiting) == (1, 1, 2)

        async def second_session() -> None:
            other.extend(
                await dispatcher.dispatch(
                    [tw.ToolCall("s", "read", {"key": "zzz"})], reg, runner_for(reg)
                )
            )

        tg.start_soon(second_session)
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a", "zzz"]  # got the free slot at once
        probe.release("zzz")
        await anyio.wait_all_tasks_blocked()
        assert [r.text for r in other] == ["read:zzz"]
        probe.release("a")
    assert probe.peak == 2


@pytest.mark.parametrize("policy", POLICIES)
async def test_ready_calls_take_slots_in_call_order(policy: str) -> None:
    probe, reg = _setup()
    started: list[str] = []
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=1, policy=policy))  # type: ignore[arg-type]
    batch = [tw.ToolCall(f"c{i}", "read", {"key": f"k{i}"}) for i in range(4)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: dispatcher.dispatch(
                batch, reg, runner_for(reg), on_started=lambda c: started.append(c.id)
            )
        )
        for i in range(4):
            await anyio.wait_all_tasks_blocked()
            assert started == [f"c{j}" for j in range(i + 1)]
            assert probe.inside == 1
            probe.release(f"k{i}")
    assert probe.peak == 1


async def test_under_conflict_a_ready_call_overtakes_a_waiting_one() -> None:
    probe, reg = _setup()
    started: list[str] = []
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2))
    batch = [
        tw.ToolCall("w", "write", {"key": "a"}),
        tw.ToolCall("ra", "read", {"key": "a"}),  # waits for w, holding nothing
        tw.ToolCall("rb", "read", {"key": "b"}),
        tw.ToolCall("rc", "read", {"key": "c"}),
    ]
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: dispatcher.dispatch(
                batch, reg, runner_for(reg), on_started=lambda c: started.append(c.id)
            )
        )
        await anyio.wait_all_tasks_blocked()
        assert started == ["w", "rb"]  # two slots: the write and the first ready read
        probe.release("b")
        await anyio.wait_all_tasks_blocked()
        assert started == ["w", "rb", "rc"]  # ra still waits, so rc gets the slot
        probe.release("a")
        await anyio.wait_all_tasks_blocked()
        assert started == ["w", "rb", "rc", "ra"]
        probe.release("c", "a")
    assert probe.peak == 2
