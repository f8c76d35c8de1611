"""InterruptToken.set from any thread: the work is done on the token's own loop.

A caller that is not on the batch's event loop (a UI thread, a timer, the
caller of a framework's sync path) interrupts by calling `set`; the cancel
scopes and events behind it must only be touched on their loop.
"""

from __future__ import annotations

import threading

import anyio
import pytest
from sched_probe import Probe, calls, dispatch_soon, runner_for

import toolweave as tw
from toolweave.scheduling import Dispatcher, InterruptToken

pytestmark = pytest.mark.anyio


def _registry(probe: Probe) -> tw.ToolRegistry:
    return tw.ToolRegistry(
        [
            probe.tool("write", concurrency=tw.Concurrency.SEQUENTIAL),
            probe.tool("cancel", interrupt=tw.Interrupt.CANCEL),
        ]
    )


def _set_from_a_plain_thread(token: InterruptToken) -> None:
    """Call `set` on a thread anyio never saw, and wait for it to return."""
    thread = threading.Thread(target=token.set)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "set() did not return"


async def test_a_set_from_another_thread_runs_the_subscribers_on_the_loop() -> None:
    probe = Probe()
    registry = _registry(probe)
    token = InterruptToken()
    loop_thread = threading.get_ident()
    fired_on: list[int] = []
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            Dispatcher(),
            calls(("cancel", "x"), ("write", "w")),
            registry,
            runner_for(registry),
            interrupt=token,
        )
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 1  # x runs; w waits for it
        token.subscribe(lambda: fired_on.append(threading.get_ident()))
        await anyio.to_thread.run_sync(_set_from_a_plain_thread, token)
    assert token.is_set()
    assert fired_on == [loop_thread]
    assert out[0].synthetic and "Cancelled: interrupted" in out[0].text
    assert out[1].synthetic and "Not run" in out[1].text
    assert "start w" not in probe.log


async def test_a_waiter_on_the_loop_wakes_when_another_thread_sets() -> None:
    token = InterruptToken()
    woke = anyio.Event()

    async def waiter() -> None:
        await token.wait()
        woke.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert not woke.is_set()
        await anyio.to_thread.run_sync(_set_from_a_plain_thread, token)
        with anyio.fail_after(10):  # deadlock guard only
            await woke.wait()


async def test_a_set_from_another_thread_before_any_batch_runs_nothing() -> None:
    probe = Probe()
    registry = _registry(probe)
    token = InterruptToken()
    await anyio.to_thread.run_sync(_set_from_a_plain_thread, token)
    out = await Dispatcher().dispatch(
        calls(("write", "a"), ("cancel", "b")),
        registry,
        runner_for(registry),
        interrupt=token,
    )
    assert all(r.synthetic and "Not run" in r.text for r in out)
    assert probe.log == []


def test_a_set_after_the_tokens_loop_ended_only_marks_it(
    anyio_backend_name: str,
) -> None:
    token = InterruptToken()
    fired: list[str] = []

    async def subscribe_and_end() -> None:
        token.subscribe(lambda: fired.append("fired"))

    done = threading.Thread(
        target=lambda: anyio.run(subscribe_and_end, backend=anyio_backend_name)
    )
    done.start()
    done.join(timeout=30)
    assert not done.is_alive()
    token.set()  # the loop's thread is gone: nothing to hop to
    assert token.is_set()
    assert fired == ["fired"]
    token.set()  # idempotent
    assert fired == ["fired"]


async def test_waiters_share_one_event_and_a_wait_after_set_returns_at_once() -> None:
    token = InterruptToken()
    woke: list[int] = []

    async def waiter(n: int) -> None:
        await token.wait()
        woke.append(n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, 1)
        tg.start_soon(waiter, 2)  # the second waiter finds the first one's event
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        token.set()
    assert sorted(woke) == [1, 2]
    fresh = InterruptToken()
    fresh.set()  # set before anyone waited: no event was ever made
    await fresh.wait()  # returns (a checkpoint), it does not hang
    assert fresh.is_set()


def test_a_subscriber_with_no_event_loop_runs_on_the_setting_thread() -> None:
    token = InterruptToken()
    seen: list[int] = []
    unsubscribe = token.subscribe(lambda: seen.append(threading.get_ident()))
    other = token.subscribe(lambda: seen.append(-1))
    other()  # unsubscribed: never called
    _set_from_a_plain_thread(token)  # no home loop: fired where set was called
    assert len(seen) == 1 and seen[0] != threading.get_ident()
    assert token.is_set()
    unsubscribe()  # after the set: harmless
