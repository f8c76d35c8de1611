"""DeadlineScope: deadlines on one shared timer per asyncio loop, native ones on trio.

What must hold on both backends: a scope expires once its time has passed and
never before; `expired` and `cut` say which of the deadline and `cancel()` came
first; anyio's cancellation semantics are kept (a shielded block inside runs
to its end; cancellation is level-triggered). On asyncio: many scopes share
one timer, an earlier deadline entered after a later one still fires first,
and a loop with no live deadline holds no work for them.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from toolweave._native.alarm import alarm_here
from toolweave._native.deadline import DeadlineScope

pytestmark = pytest.mark.anyio


async def test_a_block_that_outlives_its_deadline_is_cut_and_marked_expired() -> None:
    with DeadlineScope(0.05) as scope:
        await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert scope.expired
    assert not scope.cut


async def test_a_block_that_ends_in_time_is_not_touched() -> None:
    with DeadlineScope(3600) as scope:
        await anyio.lowlevel.checkpoint()
    assert not scope.cancelled_caught
    assert not scope.expired
    assert not scope.cancel_called


async def test_cancel_first_is_a_cut_and_the_deadline_after_it_changes_nothing() -> (
    None
):
    with DeadlineScope(0.05) as scope:
        scope.cancel()
        await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert scope.cut
    assert not scope.expired
    await anyio.sleep(0.1)  # the deadline's time passes after the block
    assert not scope.expired


async def test_the_deadline_first_wins_over_a_later_cancel() -> None:
    with DeadlineScope(0.05) as scope:
        try:
            await anyio.sleep_forever()
        finally:
            scope.cancel()  # the owner's cancel arrives while unwinding
    assert scope.expired
    assert not scope.cut


async def test_no_deadline_only_cancel_stops_it() -> None:
    with DeadlineScope(None) as scope:
        scope.cancel()
        await anyio.sleep_forever()
    assert scope.cut
    assert not scope.expired


async def test_a_shielded_block_inside_runs_to_its_end() -> None:
    reached: list[str] = []
    with DeadlineScope(0.05) as scope:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(0.2)  # past the deadline, shielded
            reached.append("shielded part finished")
        await anyio.sleep_forever()  # level-triggered: cut at once here
    assert reached == ["shielded part finished"]
    assert scope.expired and scope.cancelled_caught


async def test_cancellation_is_level_triggered_like_anyio() -> None:
    seen: list[str] = []
    with DeadlineScope(0.05) as scope:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("first")
            try:
                await anyio.sleep(3600)  # cleanup that awaits: cancelled again
            except anyio.get_cancelled_exc_class():
                seen.append("again")
                raise
    assert seen == ["first", "again"]
    assert scope.expired


async def test_each_of_many_overlapping_scopes_expires_on_its_own_deadline() -> None:
    """Deadlines 0.3, 0.1, 0.2 (entered in that order): cut in order 0.1, 0.2, 0.3."""
    order: list[float] = []
    survived: list[float] = []

    async def one(seconds: float) -> None:
        with DeadlineScope(seconds) as scope:
            await anyio.sleep_forever()
        assert scope.expired
        order.append(seconds)

    async def lives_past_them(seconds: float) -> None:
        with DeadlineScope(seconds):
            await anyio.sleep(0.4)
            survived.append(seconds)

    async with anyio.create_task_group() as tg:
        for seconds in (0.3, 0.1, 0.2):
            tg.start_soon(one, seconds)
        tg.start_soon(lives_past_them, 3600.0)
    assert order == [0.1, 0.2, 0.3]
    assert survived == [3600.0]


async def test_scopes_that_end_in_time_leave_no_live_deadline() -> None:
    for _ in range(200):  # more than the compaction threshold
        with DeadlineScope(3600):
            await anyio.lowlevel.checkpoint()
    alarm = alarm_here()
    if alarm is not None:  # asyncio: nothing is left waiting in the heap
        assert alarm._live == 0
        assert alarm._heap == []


async def test_a_scope_cut_before_its_deadline_is_dropped_from_the_heap() -> None:
    async def cut_one() -> None:
        with DeadlineScope(3600) as scope:
            scope.cancel()
            await anyio.sleep_forever()

    async def waits() -> None:
        with DeadlineScope(3600):
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        for _ in range(100):
            tg.start_soon(cut_one)
        tg.start_soon(waits)
        await anyio.sleep(0.01)
        alarm = alarm_here()
        if alarm is not None:  # compaction: dead entries never outnumber live ones 2:1
            assert len(alarm._heap) <= max(64, 2 * alarm._live)


def test_each_asyncio_loop_gets_its_own_timer() -> None:
    """Two loops one after the other in one thread: the second's deadlines fire too."""

    async def cut() -> bool:
        with DeadlineScope(0.02) as scope:
            await anyio.sleep(3600)
        return scope.expired

    assert anyio.run(cut, backend="asyncio")
    assert anyio.run(cut, backend="asyncio")


def test_a_loop_closed_with_a_pending_deadline_is_not_disturbed() -> None:
    async def leave_one() -> None:
        with DeadlineScope(3600):
            await anyio.lowlevel.checkpoint()
        # the shared timer stays set for 3600 s; the loop closes regardless

    async def after() -> str:
        await anyio.lowlevel.checkpoint()
        return "ok"

    anyio.run(leave_one, backend="asyncio")
    assert anyio.run(after, backend="asyncio") == "ok"


# -- the native asyncio path: anyio's semantics without an anyio scope ---------------


def _cancelling() -> int:
    """Cancel requests pending on the current asyncio task (0 on trio)."""
    import asyncio

    import sniffio

    if sniffio.current_async_library() != "asyncio":
        return 0
    task = asyncio.current_task()
    assert task is not None
    return task.cancelling()


def test_asyncio_uses_the_native_path_with_this_anyio() -> None:
    """If an anyio upgrade moved the internals it reads, this fails (not a silent slowdown)."""

    async def probe() -> bool:
        return DeadlineScope(1)._scope is None

    assert anyio.run(probe, backend="asyncio")


async def test_a_cancel_from_an_enclosing_scope_is_not_swallowed() -> None:
    with anyio.CancelScope() as outer:
        with DeadlineScope(0.01) as inner:
            outer.cancel()
            await anyio.sleep_forever()  # both want it cut: the outer one wins
        raise AssertionError("the inner scope swallowed the outer cancel")
    assert outer.cancelled_caught
    assert not inner.cancelled_caught


async def test_an_enclosing_cancel_that_lands_after_its_own_still_propagates() -> None:
    with anyio.CancelScope() as outer:
        with DeadlineScope(0.01) as inner:
            try:
                await anyio.sleep_forever()
            finally:
                outer.cancel()  # while the deadline's cancel unwinds the block
        raise AssertionError("the inner scope swallowed the outer cancel")
    assert outer.cancelled_caught
    assert inner.expired


async def test_a_shield_around_the_scope_does_not_stop_its_own_deadline() -> None:
    with anyio.CancelScope(shield=True), DeadlineScope(0.02) as scope:
        await anyio.sleep_forever()
    assert scope.expired and scope.cancelled_caught


async def test_cancel_from_inside_the_block_cuts_at_the_next_checkpoint() -> None:
    reached: list[str] = []
    with DeadlineScope(None) as scope:
        scope.cancel()
        reached.append("cancel() returns: the task is not cut while it runs")
        await anyio.sleep_forever()
    assert reached and scope.cut and scope.cancelled_caught


async def test_a_block_that_swallows_the_cancel_and_returns_leaves_no_pending_cancel() -> (
    None
):
    before = _cancelling()
    with DeadlineScope(0.01) as scope:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            pass  # swallowed: the block ends normally
    assert scope.expired and scope.cancel_called
    assert not scope.cancelled_caught
    assert _cancelling() == before
    await anyio.lowlevel.checkpoint()  # and nothing cancels the task afterwards


async def test_a_task_group_inside_that_was_cut_is_caught() -> None:
    with DeadlineScope(0.02) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep_forever)
            tg.start_soon(anyio.sleep_forever)
    assert scope.expired and scope.cancelled_caught
    assert _cancelling() == 0


async def test_a_worker_thread_that_may_not_be_abandoned_is_waited_for() -> None:
    import threading

    release = threading.Event()
    finished: list[str] = []

    def work() -> None:
        release.wait(5)
        finished.append("thread")

    async def let_go() -> None:
        await anyio.sleep(0.1)  # well past the deadline below
        release.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(let_go)
        with DeadlineScope(0.02) as scope:
            await anyio.to_thread.run_sync(work)  # shielded wait in anyio
            await anyio.sleep_forever()
    assert finished == ["thread"]
    assert scope.expired and scope.cancelled_caught


async def test_a_scope_is_entered_once() -> None:
    scope = DeadlineScope(1)
    with scope:
        pass
    if scope._scope is None:  # the native path says so itself
        with pytest.raises(RuntimeError), scope:
            pass


async def test_a_group_of_its_cancel_and_an_error_keeps_the_error() -> None:
    scope = DeadlineScope(0.01)
    with pytest.raises(BaseExceptionGroup) as raised, scope:  # noqa: PT012
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class() as cancel:
            raise BaseExceptionGroup("both", [cancel, ValueError("boom")]) from None
    assert raised.group_contains(ValueError)
    assert not raised.group_contains(anyio.get_cancelled_exc_class())
    assert scope.expired


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # trio: no public constructor
async def test_a_new_cancellation_raised_while_handling_its_own_is_caught() -> None:
    import asyncio

    with DeadlineScope(0.01) as scope:
        try:
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            raise asyncio.CancelledError from None  # a fresh one, same __context__
    assert scope.expired and scope.cancelled_caught


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_cancellation_pending_before_the_block_is_not_taken_for_its_own() -> (
    None
):
    """The task was cancelled before the block; its own deadline fires too: both are seen."""
    import asyncio

    async def body() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.cancel("from outside")  # pending when the block is entered
        with DeadlineScope(0) as scope:
            await anyio.sleep_forever()
        return f"swallowed (caught={scope.cancelled_caught})"

    async with asyncio.TaskGroup() as group:
        task = group.create_task(body())
    assert task.cancelled()


async def test_a_scope_cancelled_before_it_is_entered_cuts_at_the_first_checkpoint() -> (
    None
):
    scope = DeadlineScope(None)
    scope.cancel()
    with scope:
        await anyio.sleep_forever()
    assert scope.cut and scope.cancelled_caught
