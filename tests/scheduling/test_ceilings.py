"""A batch's ceilings on asyncio: one alarm entry per batch, a scope only for a call cut.

`Ceilings` keeps when each running call reaches its ceiling; the batch makes a
call's `DeadlineScope` (`DeadlineScope.adopt`) only when it must be cut, by its
ceiling or its owner. These tests pin what that must not change: every call is
cut at its own ceiling, a finished call is never cut, an earlier ceiling moves
the timer forward, a finished batch leaves nothing on the loop's alarm, and
without anyio's task table the engine falls back to a scope per call.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from sched_probe import runner_for

import toolweave as tw
from toolweave._native import anyio_tasks
from toolweave._native.deadline import native_alarm
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken
from toolweave.scheduling._batch import Batch
from toolweave.scheduling._ceilings import Ceilings
from toolweave.scheduling._leftovers import results_in_order
from toolweave.scheduling._request import Request

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the lazy path is asyncio's; trio keeps its native scopes


@tw.tool(concurrency=tw.Concurrency.SAFE)
async def hang(key: str) -> str:
    """The hang test tool."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@tw.tool(concurrency=tw.Concurrency.SAFE, timeout=0.6)
async def patient_hang(key: str) -> str:
    """The patient_hang test tool."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@tw.tool(concurrency=tw.Concurrency.SAFE)
async def quick(key: str) -> str:
    """The quick test tool."""
    return key


REG = tw.ToolRegistry([hang, patient_hang, quick])


def _live_entries() -> int:
    alarm = native_alarm()
    assert alarm is not None
    return sum(1 for entry in alarm._heap if entry[2] is not None)


async def test_each_call_is_cut_at_its_own_ceiling_and_nothing_is_left_armed() -> None:
    calls = [
        tw.ToolCall("h", "hang", {"key": "h"}),
        tw.ToolCall("p", "patient_hang", {"key": "p"}),
        tw.ToolCall("q", "quick", {"key": "q"}),
    ]
    done: list[str] = []
    out = await Dispatcher(ConcurrencyConfig(default_tool_timeout=0.2)).dispatch(
        calls, REG, runner_for(REG), on_completed=lambda c, r: done.append(c.id)
    )
    assert "did not finish within 0.2 s" in out[0].text and out[0].synthetic
    assert "did not finish within 0.6 s" in out[1].text and out[1].synthetic
    assert out[2].text == "q" and not out[2].is_error
    assert done == ["q", "h", "p"]  # each at its own ceiling, the shorter first
    assert _live_entries() == 0


async def test_a_finished_batch_is_freed_at_once_not_kept_by_its_ceiling() -> None:
    made: list[weakref.ref[Batch]] = []
    original = Batch.attach

    def attach(self: Batch, tg: Any) -> None:
        made.append(weakref.ref(self))
        original(self, tg)

    calls = [tw.ToolCall(f"q{i}", "quick", {"key": str(i)}) for i in range(3)]
    gc.disable()  # freed by reference counts alone: no cycle holds the batch
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Batch, "attach", attach)
            out = await Dispatcher(
                ConcurrencyConfig(default_tool_timeout=600)
            ).dispatch(calls, REG, runner_for(REG))
        assert [r.text for r in out] == ["0", "1", "2"]
        assert _live_entries() == 0
        assert len(made) == 1 and made[0]() is None
    finally:
        gc.enable()


class _Cuts:
    """Records the calls `Ceilings` cuts; `fired` is set at the first cut."""

    def __init__(self) -> None:
        self.cut: list[int] = []
        self.fired = anyio.Event()

    def __call__(self, index: int) -> None:
        self.cut.append(index)
        self.fired.set()

    def ceilings(self, running: Callable[[int], bool]) -> Ceilings:
        alarm = native_alarm()
        assert alarm is not None
        return Ceilings(alarm, self, running)

    async def first(self) -> list[int]:
        """The calls cut when the first expiry fired."""
        with anyio.fail_after(10):
            await self.fired.wait()
        return self.cut


async def test_only_calls_still_running_are_cut() -> None:
    cuts = _Cuts()
    ceilings = cuts.ceilings({0, 2, 3}.__contains__)
    for index in range(3):
        ceilings.start(index, 0.01)  # 1 finished before its time came
    ceilings.start(3, 600)
    assert await cuts.first() == [0, 2]
    assert _live_entries() == 1  # index 3 waits; closing drops it
    ceilings.close()
    assert _live_entries() == 0


async def test_an_earlier_ceiling_moves_the_timer_forward() -> None:
    cuts = _Cuts()
    ceilings = cuts.ceilings(lambda index: True)
    ceilings.start(0, 600)
    ceilings.start(1, 0.01)
    assert await cuts.first() == [1]
    ceilings.close()
    assert _live_entries() == 0


async def _interrupted(
    calls: list[tw.ToolCall],
    reg: tw.ToolRegistry,
    runner: Any,
    entered: anyio.Event,
    config: ConcurrencyConfig | None = None,
) -> list[tw.ToolResult]:
    """Dispatch `calls`; set the interrupt once `entered` is set; the results."""
    token = InterruptToken()
    out: list[tw.ToolResult] = []

    async def run() -> None:
        out.extend(
            await Dispatcher(config).dispatch(calls, reg, runner, interrupt=token)
        )

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await entered.wait()
            token.set()
    return out


async def test_an_interrupt_cuts_a_running_call_through_a_scope_made_then() -> None:
    entered = anyio.Event()

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    async def waits(key: str) -> str:
        """The waits test tool."""
        entered.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    reg = tw.ToolRegistry([waits, quick])
    calls = [
        tw.ToolCall("w", "waits", {"key": "w"}),
        tw.ToolCall("q", "quick", {"key": "q"}),
    ]
    config = ConcurrencyConfig(default_tool_timeout=None)
    out = await _interrupted(calls, reg, runner_for(reg), entered, config)
    assert out[0].synthetic and "interrupted" in out[0].text
    assert out[1].text == "q"


async def test_without_anyios_task_table_each_call_gets_its_own_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(anyio_tasks, "task_states", None)
    assert native_alarm() is None
    calls = [
        tw.ToolCall("h", "hang", {"key": "h"}),
        tw.ToolCall("q", "quick", {"key": "q"}),
    ]
    out = await Dispatcher(ConcurrencyConfig(default_tool_timeout=0.2)).dispatch(
        calls, REG, runner_for(REG)
    )
    assert "did not finish within 0.2 s" in out[0].text
    assert out[1].text == "q"


async def test_a_runner_that_raises_once_its_call_was_cut_is_answered_by_its_fault() -> (
    None
):
    entered = anyio.Event()

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    async def waits(key: str) -> str:
        """The waits test tool."""
        return key

    reg = tw.ToolRegistry([waits])

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        if call.id == "q":
            return tw.ToolResult(call.id, "q")
        entered.set()
        try:
            await anyio.sleep_forever()
        except BaseException:
            raise RuntimeError("broke while being cancelled") from None
        raise AssertionError("unreachable")

    calls = [
        tw.ToolCall("w", "waits", {"key": "w"}),
        tw.ToolCall("q", "waits", {"key": "q"}),
    ]
    out = await _interrupted(calls, reg, runner, entered)
    assert (
        out[0].is_error and "RuntimeError: broke while being cancelled" in out[0].text
    )
    assert out[1].text == "q"


async def test_a_call_left_without_a_result_is_answered_as_an_internal_error() -> None:
    dispatcher = Dispatcher()
    batch = dispatcher._new_batch(
        Request(REG, runner_for(REG)), eager=False, selective=False
    )
    batch.submit(tw.ToolCall("q", "quick", {"key": "q"}))
    (result,) = results_in_order(batch)
    assert result.synthetic and "internal error" in result.text
