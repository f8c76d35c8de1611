"""SendBatch: a response's calls admitted one by one as they arrive (no framework needed).

Plain anyio and threads, so both backends. Overlap is proved by rendezvous:
a call that must overlap another waits for it to be inside too.
"""

from __future__ import annotations

import threading

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolweave import Access, Concurrency
from toolweave.integrations import Declaration
from toolweave.integrations._foreign import ForeignScheduler
from toolweave.integrations._send_batch import SendBatch, SendBatches
from toolweave.scheduling import ConcurrencyConfig, InterruptToken

R = Access(reads=("db",))
W = Access(writes=("db",))
OTHER = Access(writes=("elsewhere",))
GUARD = 10.0  # deadlock guard only


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """SendBatch is plain anyio: both backends."""
    return str(request.param)


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.inside: set[int] = set()
        self.overlaps: set[frozenset[int]] = set()

    def enter(self, i: int) -> None:
        self.overlaps.update(frozenset((i, j)) for j in self.inside)
        self.inside.add(i)
        self.events.append(("start", i))

    def leave(self, i: int) -> None:
        self.inside.discard(i)
        self.events.append(("end", i))


@pytest.mark.anyio
async def test_calls_arriving_in_reverse_still_run_in_call_order() -> None:
    """r0 r1 W2 r3 arriving last-first: W2 waits for both reads, r3 for W2; r0, r1 meet."""
    batch = SendBatch([R, R, W, R], expected=range(4), cap=10)
    log = _Log()
    met = anyio.Event()

    async def call(i: int) -> None:
        seat = batch.seat([i])
        try:
            assert await seat.wait()
            log.enter(i)
            if i in (0, 1):
                if {0, 1} <= log.inside:
                    met.set()
                with anyio.fail_after(GUARD):
                    await met.wait()  # the two reads are inside at once
            await anyio.wait_all_tasks_blocked()
            log.leave(i)
        finally:
            seat.leave()

    async with anyio.create_task_group() as tg:
        for i in (3, 2, 1, 0):
            tg.start_soon(call, i)
            await anyio.wait_all_tasks_blocked()
    at = {e: n for n, e in enumerate(log.events)}
    assert log.overlaps == {frozenset((0, 1))}
    assert at["start", 2] > max(at["end", 0], at["end", 1])
    assert at["start", 3] > at["end", 2]


@pytest.mark.anyio
async def test_the_cap_is_reached_and_never_exceeded() -> None:
    batch = SendBatch([R] * 5, expected=range(5), cap=2)
    release = anyio.Event()
    peak = 0

    async def call(i: int) -> None:
        nonlocal peak
        seat = batch.seat([i])
        try:
            assert await seat.wait()
            peak = max(peak, batch.running)
            await release.wait()
        finally:
            seat.leave()

    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(call, i)
        await anyio.wait_all_tasks_blocked()
        assert batch.running == 2
        release.set()
    assert peak == 2 and batch.running == 0


@pytest.mark.anyio
async def test_a_call_not_expected_is_waited_for_only_once_it_came() -> None:
    """A resumed step: call 0 finished before; call 2 (a write) must not wait for it."""
    batch = SendBatch([W, OTHER, W], expected=[], cap=10)
    seat = batch.seat([2])
    with anyio.fail_after(GUARD):
        assert await seat.wait()
    seat.leave()


@pytest.mark.anyio
async def test_an_interrupt_while_waiting_answers_false_and_frees_later_calls() -> None:
    batch = SendBatch([W, W, OTHER], expected=range(3), cap=10)
    token = InterruptToken()
    first = batch.seat([0])
    assert await first.wait(token)
    outcome: list[bool] = []

    async def second() -> None:
        seat = batch.seat([1])
        try:
            outcome.append(await seat.wait(token))
        finally:
            seat.leave()

    async with anyio.create_task_group() as tg:
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        assert outcome == []  # waits for call 0
        token.set()
    assert outcome == [False]
    first.leave()


@pytest.mark.anyio
async def test_a_call_cancelled_while_waiting_leaves_and_later_calls_go_on() -> None:
    batch = SendBatch([W, W, W], expected=range(3), cap=10)
    first = batch.seat([0])
    assert await first.wait()
    admitted: list[int] = []

    async def call(i: int) -> None:
        seat = batch.seat([i])
        try:
            if await seat.wait():
                admitted.append(i)
        finally:
            seat.leave()

    scope = anyio.CancelScope()

    async def cancelled() -> None:
        with scope:
            await call(1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(cancelled)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(call, 2)
        await anyio.wait_all_tasks_blocked()
        scope.cancel()  # call 1, waiting for call 0, is cancelled
        await anyio.wait_all_tasks_blocked()
        assert admitted == []  # call 2 still waits for call 0, not for call 1
        first.leave()
    assert admitted == [2]


@pytest.mark.anyio
async def test_a_call_that_comes_again_holds_later_conflicting_calls() -> None:
    """A retry (a middleware outside) of call 0 after it left: call 1 waits for it."""
    batch = SendBatch([W, W], expected=range(2), cap=10)
    seat = batch.seat([0])
    assert await seat.wait()
    seat.leave()
    retry = batch.seat([0])
    assert await retry.wait()
    later: list[bool] = []

    async def call_1() -> None:
        s = batch.seat([1])
        try:
            later.append(await s.wait())
        finally:
            s.leave()

    async with anyio.create_task_group() as tg:
        tg.start_soon(call_1)
        await anyio.wait_all_tasks_blocked()
        assert later == []
        retry.leave()
    assert later == [True]


@pytest.mark.anyio
async def test_calls_sharing_an_id_take_the_first_free_place() -> None:
    batch = SendBatch([W, R], expected=range(2), cap=10)
    a, b = batch.seat([0, 1]), batch.seat([0, 1])
    assert await a.wait()
    assert a.index == 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.wait)
        await anyio.wait_all_tasks_blocked()
        assert b.index == 1 and batch.running == 1  # the read waits for the write
        a.leave()
    b.leave()


def test_threads_conflicting_never_overlap_and_reads_meet() -> None:
    """The sync path: each call on a thread of its own, woken by a threading.Event."""
    batch = SendBatch([R, R, W, R, R], expected=range(5), cap=10)
    log = _Log()
    lock = threading.Lock()
    barriers = {0: threading.Barrier(2), 1: threading.Barrier(2)}
    pair = {0: 0, 1: 0, 3: 1, 4: 1}
    errors: list[BaseException] = []

    def call(i: int) -> None:
        seat = batch.seat([i])
        try:
            assert seat.wait_sync()
            with lock:
                log.enter(i)
            if i in pair:
                barriers[pair[i]].wait(timeout=GUARD)
            with lock:
                log.leave(i)
        except BaseException as exc:
            errors.append(exc)
        finally:
            seat.leave()

    threads = [threading.Thread(target=call, args=(i,)) for i in (4, 3, 2, 1, 0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=GUARD)
    assert errors == []
    assert log.overlaps == {frozenset((0, 1)), frozenset((3, 4))}
    at = {e: n for n, e in enumerate(log.events)}
    assert at["start", 2] > max(at["end", 0], at["end", 1])
    assert min(at["start", 3], at["start", 4]) > at["end", 2]


def test_a_thread_waiting_is_woken_by_an_interrupt_from_another_thread() -> None:
    batch = SendBatch([W, W], expected=range(2), cap=10)
    token = InterruptToken()
    first = batch.seat([0])
    assert first.wait_sync(token)
    outcome: list[bool] = []
    second = batch.seat([1])
    waiter = threading.Thread(target=lambda: outcome.append(second.wait_sync(token)))
    waiter.start()
    setter = threading.Thread(target=token.set)
    setter.start()
    setter.join(timeout=GUARD)
    waiter.join(timeout=GUARD)
    assert outcome == [False]
    second.leave()
    first.leave()


def test_send_batches_keeps_a_bounded_number_of_batches() -> None:
    batches = SendBatches(keep=2)
    made: list[int] = []

    def make(n: int) -> SendBatch:
        made.append(n)
        return SendBatch([R], expected=[0], cap=1)

    one = batches.get("a", lambda: make(1))
    assert batches.get("a", lambda: make(9)) is one
    batches.get("b", lambda: make(2))
    batches.get("c", lambda: make(3))  # "a" is the oldest: dropped
    batches.get("a", lambda: make(4))
    assert made == [1, 2, 3, 4]


def test_a_place_outside_the_batch_is_refused() -> None:
    with pytest.raises(IndexError):
        SendBatch([R], expected=[0], cap=1).seat([1])


_ACCESS = st.sampled_from([R, W, OTHER, Access(), Access.barrier()])


@settings(max_examples=60, deadline=None)
@given(
    accesses=st.lists(_ACCESS, min_size=1, max_size=6),
    order=st.randoms(use_true_random=False),
    cap=st.integers(1, 4),
)
def test_any_arrival_order_is_serial_equivalent(
    accesses: list[Access], order: object, cap: int
) -> None:
    """Whatever order the calls arrive in: no conflicting pair overlaps, and of
    each conflicting pair the earlier call ends before the later starts."""
    import random

    assert isinstance(order, random.Random)
    arrival = list(range(len(accesses)))
    order.shuffle(arrival)
    batch = SendBatch(accesses, expected=range(len(accesses)), cap=cap)
    log = _Log()

    async def main() -> None:
        async def call(i: int) -> None:
            seat = batch.seat([i])
            try:
                assert await seat.wait()
                assert batch.running <= cap
                log.enter(i)
                await anyio.wait_all_tasks_blocked()
                log.leave(i)
            finally:
                seat.leave()

        async with anyio.create_task_group() as tg:
            for i in arrival:
                tg.start_soon(call, i)

    anyio.run(main)
    at = {e: n for n, e in enumerate(log.events)}
    assert len(at) == 2 * len(accesses)
    for i, a in enumerate(accesses):
        for j in range(i):
            if a.conflicts_with(accesses[j]):
                assert frozenset((i, j)) not in log.overlaps
                assert at["end", j] < at["start", i]


def _scheduler(config: ConcurrencyConfig | None = None) -> ForeignScheduler:
    declarations = {
        "read": Declaration(concurrency=Concurrency.SAFE, access=R),
        "write": Declaration(access=W),
        "safe": Declaration(concurrency=Concurrency.SAFE),
    }
    return ForeignScheduler(declarations, config=config)


@pytest.mark.parametrize(
    ("config", "name", "expected"),
    [
        (None, "read", R),  # conflict: the declared access
        (None, "write", W),
        (None, "safe", Access.read_all()),  # SAFE, no access: reads everything
        (None, "undeclared", Access.barrier()),  # fail closed
        (ConcurrencyConfig(policy="partition"), "read", Access.read_all()),
        (ConcurrencyConfig(policy="partition"), "write", Access.barrier()),
        (ConcurrencyConfig(enabled=False), "read", Access.barrier()),
    ],
    ids=[
        "read",
        "write",
        "safe",
        "undeclared",
        "partition-read",
        "partition-write",
        "off",
    ],
)
def test_access_of_reads_the_policy(
    config: object, name: str, expected: Access
) -> None:
    scheduler = _scheduler(config)
    assert scheduler.access_of(name, {"x": 1}) == expected  # type: ignore[attr-defined]


def test_batch_cap_is_the_configs() -> None:
    scheduler = _scheduler(ConcurrencyConfig(max_concurrency=4, per_batch_max=3))
    assert scheduler.batch_cap == 3
