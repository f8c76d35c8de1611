"""Edges of the batch engine's parts: a readiness step that is not the last hold,
an interrupt raised from `on_started` in the middle of a burst of starts, an
empty deferred harvest, and the settled latch with more than one waiter.

Each is driven by rendezvous (`wait_all_tasks_blocked`, events), on both backends.
"""

from __future__ import annotations

import anyio
import pytest
from sched_probe import Probe, calls, dispatch_soon, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken
from toolweave.scheduling._latch import Latch

pytestmark = pytest.mark.anyio


async def test_a_readiness_step_done_before_its_dependency_does_not_start_the_call() -> (
    None
):
    """The step drops one hold; the call still waits for the earlier call it conflicts with."""
    probe = Probe()
    ran: list[str] = []
    prepared = anyio.Event()

    class Cold(tw.tools.FunctionTool):
        @property
        def needs_prepare(self) -> bool:
            return not prepared.is_set()

        async def prepare(self) -> None:
            prepared.set()

    async def cold_body(key: str) -> str:
        ran.append(key)
        return f"cold:{key}"

    cold = Cold(cold_body, name="cold", description="")  # undeclared: a barrier
    reg = tw.ToolRegistry([cold, probe.tool("read")])
    dispatcher = Dispatcher()
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg, dispatcher, calls(("read", "a"), ("cold", "x")), reg, runner_for(reg)
        )
        await anyio.wait_all_tasks_blocked()
        assert prepared.is_set() and probe.started() == ["a"]
        assert ran == []  # prepared, but `a` has not finished
        probe.release("a")
    assert ran == ["x"]
    assert [r.content for r in out] == ["read:a", "cold:x"]


async def test_an_interrupt_from_on_started_stops_the_burst_of_starts() -> None:
    """Ready calls with free slots start in one synchronous burst; a halt mid-burst ends it."""
    probe = Probe()
    reg = tw.ToolRegistry([probe.tool("read", interrupt=tw.Interrupt.CANCEL)])
    token = InterruptToken()
    started: list[str] = []
    completed: list[str] = []

    def on_started(call: tw.ToolCall) -> None:
        started.append(call.id)
        token.set()

    results = await Dispatcher().dispatch(
        calls(("read", "a"), ("read", "b"), ("read", "c")),
        reg,
        runner_for(reg),
        on_started,
        lambda call, result: completed.append(call.id),
        interrupt=token,
    )
    assert started == ["c0"]  # the burst stopped after the first start
    assert probe.started() == []  # the halt came before any runner was entered
    assert [r.is_error and r.synthetic for r in results] == [True, True, True]
    assert all("interrupted" in r.content for r in results)
    assert sorted(completed) == ["c0", "c1", "c2"]  # every call answered once


async def test_a_deferred_stream_harvested_without_calls_returns_no_result() -> None:
    reg = tw.ToolRegistry([Probe().tool("read")])
    dispatcher = Dispatcher(ConcurrencyConfig(enabled=False))
    async with dispatcher.open_stream(reg, runner_for(reg)) as stream:
        assert await stream.harvest() == []
    assert dispatcher.statistics().batches == 0


async def test_the_settled_latch_wakes_every_waiter_and_then_returns_at_once() -> None:
    latch = Latch()
    woke: list[int] = []

    async def waiter(n: int) -> None:
        await latch.wait()
        woke.append(n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, 1)
        tg.start_soon(waiter, 2)  # the event exists already: it waits on the same
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        latch.set()
    assert sorted(woke) == [1, 2]
    with anyio.fail_after(1):
        await latch.wait()  # set: no wait
    latch.set()  # idempotent
    assert latch.is_set


async def test_a_lone_call_runs_its_readiness_step_first_and_outside_the_slot() -> None:
    """One call takes the one-call path; its step runs before it takes a host slot."""
    order: list[str] = []
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=1))

    class Cold(tw.tools.FunctionTool):
        connected = False

        @property
        def needs_prepare(self) -> bool:
            return not self.connected

        async def prepare(self) -> None:
            order.append(
                f"prepare, slots in use {dispatcher.statistics().slots_in_use}"
            )
            self.connected = True

    async def cold_body(key: str) -> str:
        order.append(f"run {key}")
        return f"cold:{key}"

    cold = Cold(cold_body, name="cold", description="")
    reg = tw.ToolRegistry([cold])
    (result,) = await dispatcher.dispatch(calls(("cold", "x")), reg, runner_for(reg))
    assert result.content == "cold:x" and not result.is_error
    assert order == ["prepare, slots in use 0", "run x"]
    assert dispatcher.statistics().slots_in_use == 0
