"""InterruptToken.set from any thread: the work is done on the token's own loop.

A caller that is not on the batch's event loop (a UI thread, a timer, the
caller of a framework's sync path) interrupts by calling `set`; the cancel
scopes and events behind it must only be touched on their loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel
import pytest
import sniffio
from sched_probe import Probe, calls, dispatch_soon, runner_for

import toolweave as tw
from toolweave.scheduling import Dispatcher, InterruptToken
from toolweave.scheduling._loops import wait_unless

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
    token.set()  # the loop has ended: its subscriber is dropped, not run here
    assert token.is_set()
    assert fired == []
    token.set()  # idempotent
    assert fired == []


async def test_two_waiters_wake_and_a_wait_after_set_returns_at_once() -> None:
    token = InterruptToken()
    woke: list[int] = []

    async def waiter(n: int) -> None:
        await token.wait()
        woke.append(n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, 1)
        tg.start_soon(waiter, 2)
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        token.set()
    assert sorted(woke) == [1, 2]
    fresh = InterruptToken()
    fresh.set()  # set before anyone waited
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


# -- a token across loops: each subscriber on its own loop --------------------------


def _run_loop_on_a_thread(
    backend: str, body: Callable[[], Awaitable[None]], *, close_at_once: bool = False
) -> threading.Thread:
    """Run `body` on a fresh event loop on a thread of its own (started).

    `close_at_once` (asyncio): the loop stops when `body` returns and is closed
    with whatever is still queued on it, as ``asyncio.run`` does after its last
    step; trio runs everything it accepted before its run returns.
    """

    def run_asyncio() -> None:
        loop = asyncio.new_event_loop()

        async def then_stop() -> None:
            await body()
            loop.stop()  # the callbacks queued from now on are never run

        try:
            loop.run_until_complete(then_stop() if close_at_once else body())
        finally:
            loop.close()

    def run() -> None:
        if backend == "asyncio":
            run_asyncio()
        else:
            anyio.run(body, backend=backend)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _joined(thread: threading.Thread) -> None:
    thread.join(timeout=30)
    assert not thread.is_alive(), "the thread did not return (a hung hand-off)"


def test_a_loop_that_unsubscribes_and_ends_mid_hand_off_lets_set_return(
    anyio_backend_name: str,
) -> None:
    token = InterruptToken()
    posted = threading.Event()
    token.subscribe(posted.set)  # no loop: runs on the setting thread, after the posts
    subscribed = threading.Event()
    fired_on: list[int] = []
    loop_thread: list[int] = []

    async def body() -> None:
        loop_thread.append(threading.get_ident())
        unsubscribe = token.subscribe(lambda: fired_on.append(threading.get_ident()))
        subscribed.set()
        # the loop is held in this step: the hand-off is queued on it, not run
        assert posted.wait(timeout=30)
        unsubscribe()  # runs what was handed to this loop, here, before the loop ends

    loop = _run_loop_on_a_thread(anyio_backend_name, body, close_at_once=True)
    assert subscribed.wait(timeout=30)
    setter = threading.Thread(target=token.set)
    setter.start()
    _joined(setter)  # before the fix: blocked for ever on the closed loop
    _joined(loop)
    assert token.is_set()
    assert fired_on == loop_thread  # once, on its own loop's thread


def test_a_set_mid_hand_off_to_a_loop_that_closes_returns_and_runs_nothing() -> None:
    token = InterruptToken()
    posted = threading.Event()
    token.subscribe(posted.set)
    fired: list[str] = []
    loop = asyncio.new_event_loop()

    async def subscribe_and_leave() -> None:
        token.subscribe(lambda: fired.append("stale"))  # never unsubscribed

    try:
        loop.run_until_complete(subscribe_and_leave())  # stopped, not closed
        setter = threading.Thread(target=token.set)
        setter.start()
        assert posted.wait(timeout=30)  # the hand-off is queued on the stopped loop
    finally:
        loop.close()  # drops it
    _joined(setter)
    assert token.is_set()
    assert fired == []


def test_a_token_used_by_two_loops_one_after_another_fires_on_the_second(
    anyio_backend_name: str,
) -> None:
    token = InterruptToken()
    fired: list[tuple[str, int]] = []
    ready = threading.Event()

    async def first_loop() -> None:
        unsubscribe = token.subscribe(lambda: fired.append(("first", 0)))
        token.subscribe(lambda: fired.append(("stale", 0)))  # left behind
        with anyio.move_on_after(0):
            await token.wait()  # a waiter that gives up
        unsubscribe()

    async def second_loop() -> None:
        token.subscribe(lambda: fired.append(("second", threading.get_ident())))
        ready.set()
        await token.wait()
        fired.append(("woke", threading.get_ident()))

    _joined(_run_loop_on_a_thread(anyio_backend_name, first_loop))
    second = _run_loop_on_a_thread(anyio_backend_name, second_loop)
    assert ready.wait(timeout=30)
    token.set()
    assert fired[0][0] == "second"  # ran before set returned
    _joined(second)
    second_thread = fired[0][1]
    assert second_thread != threading.get_ident()
    assert fired == [("second", second_thread), ("woke", second_thread)]


def test_subscribers_on_two_live_loops_each_run_on_their_own_thread_in_order(
    anyio_backend_name: str,
) -> None:
    token = InterruptToken()
    fired: list[tuple[str, int, int]] = []
    all_subscribed = threading.Barrier(3)

    def loop_body(name: str) -> Callable[[], Awaitable[None]]:
        async def body() -> None:
            for n in range(3):
                token.subscribe(
                    lambda n=n: fired.append((name, n, threading.get_ident()))
                )
            all_subscribed.wait(timeout=30)
            await token.wait()

        return body

    loops = [
        _run_loop_on_a_thread(anyio_backend_name, loop_body(name)) for name in "ab"
    ]
    all_subscribed.wait(timeout=30)
    token.set()
    ran_before_set_returned = list(fired)
    for loop in loops:
        _joined(loop)
    assert sorted(ran_before_set_returned) == sorted(fired) and len(fired) == 6
    for name in "ab":
        mine = [(n, thread) for who, n, thread in fired if who == name]
        assert [n for n, _ in mine] == [0, 1, 2]  # subscription order, per loop
        assert len({thread for _, thread in mine}) == 1
    threads = {thread for _, _, thread in fired}
    assert len(threads) == 2 and threading.get_ident() not in threads


async def test_a_set_on_the_subscribers_own_loop_runs_them_synchronously() -> None:
    token = InterruptToken()
    fired: list[int] = []
    token.subscribe(lambda: fired.append(1))
    token.subscribe(lambda: fired.append(2))
    token.set()  # no checkpoint: they ran before set returned
    assert fired == [1, 2]
    await anyio.lowlevel.checkpoint()
    assert fired == [1, 2]


def test_a_failing_subscriber_does_not_skip_the_rest_and_set_raises_it(
    anyio_backend_name: str,
) -> None:
    token = InterruptToken()
    fired: list[str] = []
    ready = threading.Event()

    def fail() -> None:
        raise ValueError("subscriber failed")

    async def body() -> None:
        token.subscribe(fail)
        token.subscribe(lambda: fired.append("after the failure"))
        ready.set()
        await token.wait()

    loop = _run_loop_on_a_thread(anyio_backend_name, body)
    assert ready.wait(timeout=30)
    token.subscribe(fail)  # no loop: runs here; the first error is the one raised
    with pytest.raises(ValueError, match="subscriber failed"):
        token.set()
    _joined(loop)
    assert fired == ["after the failure"]
    assert token.is_set()


@pytest.mark.parametrize("library", ["asyncio", "curio"])
def test_a_subscriber_with_no_running_loop_of_ours_runs_on_the_setting_thread(
    library: str,
) -> None:
    token = InterruptToken()
    seen: list[int] = []
    marker = sniffio.current_async_library_cvar.set(library)  # but no loop runs here
    try:
        token.subscribe(lambda: seen.append(threading.get_ident()))
    finally:
        sniffio.current_async_library_cvar.reset(marker)
    _set_from_a_plain_thread(token)
    assert len(seen) == 1 and seen[0] != threading.get_ident()


def test_a_wait_for_a_hand_off_gives_up_once_the_loop_has_ended() -> None:
    done = threading.Event()
    asked: list[bool] = []

    def ended() -> bool:
        asked.append(True)
        return len(asked) == 2  # still running at the first look, ended at the second

    wait_unless(done, ended)
    assert len(asked) == 2 and not done.is_set()
    done.set()
    wait_unless(done, lambda: pytest.fail("done: nothing to ask"))
