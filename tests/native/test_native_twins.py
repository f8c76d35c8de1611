"""Each native primitive against its public-anyio twin, on asyncio and trio.

The same scenario runs once through `toolweave._native` and once through the
anyio API the native code stands in for; both must show the same observable
behaviour, and each is also held to the expected literal (so a twin that
changed with it would still fail). Where the two differ on purpose (a cancel
from ``task.cancel()``, which anyio's scopes do not see) the test says so.
Overlap is proved by rendezvous, never by timing.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
import sniffio

from toolweave._native.cancel import cancelled_from_outside, is_cancellation
from toolweave._native.clock import fast_clock
from toolweave._native.daemon_pool import run_on_daemon_thread
from toolweave._native.deadline import DeadlineScope
from toolweave._native.spawn import open_spawner
from toolweave._native.threads import run_in_worker_thread
from toolweave._native.wakeup import Wakeup

pytestmark = pytest.mark.anyio

Scope = Callable[[float | None], Any]


def native_scope(seconds: float | None) -> DeadlineScope:
    return DeadlineScope(seconds)


def anyio_scope(seconds: float | None) -> anyio.CancelScope:
    deadline = math.inf if seconds is None else anyio.current_time() + seconds
    return anyio.CancelScope(deadline=deadline)


SCOPES = pytest.mark.parametrize(
    "make", [native_scope, anyio_scope], ids=["native", "anyio"]
)


# -- deadline scopes -------------------------------------------------------------------


@SCOPES
async def test_a_deadline_cuts_a_block_that_waits_forever(make: Scope) -> None:
    reached = []
    with make(0.01) as scope:
        await anyio.sleep_forever()
        reached.append("after the wait")  # pragma: no cover - the deadline cuts
    assert (scope.cancelled_caught, scope.cancel_called, reached) == (True, True, [])


@SCOPES
async def test_a_block_that_ends_in_time_is_untouched(make: Scope) -> None:
    with make(60) as scope:
        await anyio.lowlevel.checkpoint()
    assert (scope.cancelled_caught, scope.cancel_called) == (False, False)


@SCOPES
async def test_cancel_before_entering_cuts_at_the_first_checkpoint(make: Scope) -> None:
    steps = []
    scope = make(None)
    scope.cancel()
    with scope:
        steps.append("entered")
        await anyio.lowlevel.checkpoint()
        steps.append("past the checkpoint")  # pragma: no cover
    assert (steps, scope.cancelled_caught) == (["entered"], True)


@SCOPES
async def test_a_shield_inside_holds_off_the_cut_until_it_is_left(make: Scope) -> None:
    """Both cut only once the shield is left; anyio at the very next checkpoint.

    The difference on purpose: anyio re-delivers when its shielded scope exits
    (the scope's own exit hook); the native scope on asyncio cannot hook an
    anyio scope's exit and looks again on a backoff (`_SHIELD_POLL`, at most
    50 ms apart), so a few checkpoints after the shield may still pass there.
    """
    steps: list[str] = []
    release = anyio.Event()
    shielded = anyio.Event()

    async def cut_then_release(scope: Any) -> None:
        await shielded.wait()
        scope.cancel()
        await anyio.lowlevel.checkpoint()
        steps.append("cancelled")
        release.set()

    checkpoints_after = 0
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            with make(None) as scope:
                tg.start_soon(cut_then_release, scope)
                with anyio.CancelScope(shield=True):
                    shielded.set()
                    await release.wait()  # the cancel lands while this waits
                    steps.append("shielded part done")
                while True:
                    await anyio.sleep(0.001)
                    checkpoints_after += 1
    assert steps == ["cancelled", "shielded part done"]
    assert scope.cancelled_caught
    native_asyncio = (
        make is native_scope and sniffio.current_async_library() == "asyncio"
    )
    if not native_asyncio:
        assert checkpoints_after == 0


@SCOPES
async def test_an_enclosing_cancel_passes_through_it(make: Scope) -> None:
    with anyio.CancelScope() as outer:
        with make(60) as inner:
            outer.cancel()
            await anyio.lowlevel.checkpoint()
    assert (outer.cancelled_caught, inner.cancelled_caught) == (True, False)


@SCOPES
async def test_an_error_inside_leaves_as_itself(make: Scope) -> None:
    error = ValueError("mine")
    scope = make(60)

    async def fails() -> None:
        with scope:
            await anyio.lowlevel.checkpoint()
            raise error

    with pytest.raises(ValueError, match="mine") as raised:
        await fails()
    assert raised.value is error
    assert not scope.cancelled_caught


@SCOPES
async def test_a_cut_task_group_inside_is_caught(make: Scope) -> None:
    started = anyio.Event()
    with make(None) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep_forever)

            async def mark() -> None:
                started.set()

            tg.start_soon(mark)
            await started.wait()
            scope.cancel()
    assert scope.cancelled_caught


# -- worker threads ----------------------------------------------------------------

Thread = Callable[..., Any]


async def _anyio_thread(
    fn: Callable[[], Any], *, abandon_on_cancel: bool = False
) -> Any:
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=abandon_on_cancel)


THREADS = pytest.mark.parametrize(
    "run",
    [run_on_daemon_thread, run_in_worker_thread, _anyio_thread],
    ids=["daemon_pool", "worker_thread", "anyio"],
)
_seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="unset")


@THREADS
async def test_a_thread_gives_its_result_and_sees_the_callers_context(
    run: Thread,
) -> None:
    _seen.set("caller's")
    here = threading.get_ident()
    outcome = await run(lambda: (_seen.get(), threading.get_ident() != here))
    assert outcome == ("caller's", True)


@THREADS
async def test_a_threads_error_reaches_the_caller_as_itself(run: Thread) -> None:
    error = KeyError("boom")

    def fails() -> None:
        raise error

    with pytest.raises(KeyError) as raised:
        await run(fails)
    assert raised.value is error


@THREADS
async def test_abandoning_a_stuck_thread_returns_at_once(run: Thread) -> None:
    entered, release, ended = threading.Event(), threading.Event(), threading.Event()

    def stuck() -> None:
        entered.set()
        release.wait(30)
        ended.set()

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_once_inside() -> None:
                await anyio.to_thread.run_sync(entered.wait, 30)
                scope.cancel()

            tg.start_soon(cancel_once_inside)
            await run(stuck, abandon_on_cancel=True)
    assert scope.cancelled_caught
    assert not ended.is_set()  # the caller left while the thread still ran
    release.set()
    await anyio.to_thread.run_sync(ended.wait, 30)


@THREADS
async def test_without_abandon_a_cancel_waits_for_the_thread(run: Thread) -> None:
    entered, release = threading.Event(), threading.Event()
    finished = []

    def slow() -> None:
        entered.set()
        release.wait(30)
        finished.append(True)

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def cancel_then_release() -> None:
                await anyio.to_thread.run_sync(entered.wait, 30)
                scope.cancel()
                release.set()

            tg.start_soon(cancel_then_release)
            await run(slow)
    assert finished == [True]  # the cancel waited for the function's end


# -- the spawner -------------------------------------------------------------------

Group = Callable[[], AbstractContextManager[Any]]


def _anyio_group() -> Any:
    return anyio.create_task_group()


GROUPS = pytest.mark.parametrize(
    "open_group", [open_spawner, _anyio_group], ids=["native", "anyio"]
)


@GROUPS
async def test_all_children_overlap_and_are_awaited(open_group: Group) -> None:
    n, started, finished = 5, [], []
    all_in = anyio.Event()

    async def child(i: int) -> None:
        started.append(i)
        if len(started) == n:
            all_in.set()
        await all_in.wait()  # none ends before every one began: they overlap
        finished.append(i)

    async with open_group() as group:
        for i in range(n):
            group.start_soon(child, i)
    assert (sorted(started), sorted(finished)) == (list(range(n)), list(range(n)))


@GROUPS
async def test_a_failing_child_cancels_its_siblings_and_surfaces(
    open_group: Group,
) -> None:
    sibling_cancelled = []
    waiting = anyio.Event()

    async def waits() -> None:
        try:
            waiting.set()
            await anyio.sleep_forever()
        except BaseException as exc:
            sibling_cancelled.append(is_cancellation(exc))
            raise

    async def fails() -> None:
        await waiting.wait()
        raise ValueError("child")

    async def both() -> None:
        async with open_group() as group:
            group.start_soon(waits)
            group.start_soon(fails)

    with pytest.raises(BaseExceptionGroup) as raised:
        await both()
    assert [type(e) for e in raised.value.exceptions] == [ValueError]
    assert sibling_cancelled == [True]


@GROUPS
async def test_cancelling_the_owner_cancels_the_children(open_group: Group) -> None:
    cancelled = []
    waiting = anyio.Event()

    async def waits() -> None:
        try:
            waiting.set()
            await anyio.sleep_forever()
        except BaseException as exc:
            cancelled.append(is_cancellation(exc))
            raise

    with anyio.CancelScope() as scope:
        async with open_group() as group:
            group.start_soon(waits)
            await waiting.wait()
            scope.cancel()
    assert scope.cancelled_caught and cancelled == [True]


# -- the slot waiter ---------------------------------------------------------------


class _EventWaiter:
    """The public twin of `Wakeup`: an anyio Event."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    def wait(self) -> Any:
        return self.event.wait()

    def wake(self) -> None:
        self.event.set()


WAITERS = pytest.mark.parametrize(
    "make", [Wakeup, _EventWaiter], ids=["native", "anyio"]
)


@WAITERS
async def test_a_waiter_woken_before_it_waits_passes(make: Callable[[], Any]) -> None:
    waiter = make()
    waiter.wake()
    waiter.wake()  # twice: still one wakeup, no error
    with anyio.fail_after(5):
        await waiter.wait()


@WAITERS
async def test_a_parked_waiter_resumes_when_woken(make: Callable[[], Any]) -> None:
    waiter, steps = make(), []
    parked = anyio.Event()

    async def wait() -> None:
        parked.set()
        await waiter.wait()
        steps.append("woken")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await parked.wait()
            await anyio.lowlevel.checkpoint()
            assert steps == []  # parked, not passed
            waiter.wake()
    assert steps == ["woken"]


@WAITERS
async def test_waking_a_cancelled_waiter_does_nothing(make: Callable[[], Any]) -> None:
    waiter = make()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await waiter.wait()
    assert scope.cancelled_caught
    waiter.wake()  # its task left: no error, nobody woken


# -- the clock and the cancel helpers ----------------------------------------------


async def test_the_loop_clock_reads_anyios_time() -> None:
    clock = fast_clock()
    readings = [anyio.current_time(), clock(), anyio.current_time(), clock()]
    assert readings == sorted(readings)
    await anyio.sleep(0.01)
    assert clock() >= readings[-1] + 0.01 - 1e-9


async def test_a_real_cancellation_is_seen_from_outside_like_anyios_deadline() -> None:
    seen = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException as exc:
            seen.append(
                (
                    is_cancellation(exc),
                    cancelled_from_outside(),
                    anyio.current_effective_deadline() == -math.inf,
                )
            )
            raise
    assert seen == [(True, True, True)]


async def test_a_cancellation_raised_by_hand_is_not_from_outside() -> None:
    exc = anyio.get_cancelled_exc_class()
    if sniffio.current_async_library() == "trio":
        exc = asyncio.CancelledError  # trio's own cannot be made by hand
    seen = []
    try:
        raise exc()
    except BaseException as raised:
        seen.append((is_cancellation(raised), cancelled_from_outside()))
        seen.append((anyio.current_effective_deadline() == -math.inf, False))
    assert seen == [(True, False), (False, False)]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_task_cancel_is_seen_where_anyios_scopes_are_blind(
    anyio_backend: str,
) -> None:
    """The difference on purpose: a TaskGroup or caller's ``task.cancel()``."""
    seen = []
    entered = anyio.Event()

    async def victim() -> None:
        try:
            entered.set()
            await anyio.sleep_forever()
        except asyncio.CancelledError:
            seen.append((cancelled_from_outside(), anyio.current_effective_deadline()))
            raise

    task = asyncio.get_running_loop().create_task(victim())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [(True, math.inf)]
