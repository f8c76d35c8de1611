"""Slots: the engine's caps. Never more than `total` taken, waiters served in order, no leak."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from toolweave.scheduling._slots import Slots

pytestmark = pytest.mark.anyio


async def test_free_slots_are_taken_at_once_up_to_the_total() -> None:
    slots = Slots(2)
    assert slots.try_take()
    assert slots.try_take()
    assert not slots.try_take()
    assert slots.used == 2
    slots.give()
    assert slots.used == 1
    assert slots.try_take()


async def test_waiters_are_served_first_come_first_served() -> None:
    slots = Slots(1)
    assert slots.try_take()
    order: list[int] = []

    async def wait_for_one(n: int) -> None:
        await slots.take()
        order.append(n)

    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(wait_for_one, n)
            await anyio.wait_all_tasks_blocked()  # n is in line before n + 1
        assert not slots.try_take()  # a waiter is in line: no jumping it
        for _ in range(3):
            slots.give()
            await anyio.wait_all_tasks_blocked()
    assert order == [0, 1, 2]
    assert slots.used == 1  # the last waiter still holds its slot


async def test_a_waiter_cancelled_in_line_leaves_it() -> None:
    slots = Slots(1)
    assert slots.try_take()
    with anyio.move_on_after(0.01) as scope:
        await slots.take()
    assert scope.cancelled_caught
    slots.give()
    assert slots.used == 0
    assert slots.try_take()


async def test_a_slot_handed_to_a_waiter_that_is_cancelled_is_not_lost() -> None:
    """Granted, then cancelled before it resumed: either it runs (and gives back) or gives on."""
    slots = Slots(1)
    assert slots.try_take()
    got: list[str] = []

    async def first(scope: anyio.CancelScope) -> None:
        with scope:
            await slots.take()
            got.append("first")
            slots.give()

    async def second() -> None:
        await slots.take()
        got.append("second")

    first_scope = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(first, first_scope)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(second)
        await anyio.wait_all_tasks_blocked()
        slots.give()  # handed to `first` ...
        first_scope.cancel()  # ... which is cancelled before it runs again
    assert got[-1] == "second"
    assert slots.used == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("cancel_first", [False, True])
async def test_a_native_cancel_around_the_hand_over_gives_the_slot_on(
    cancel_first: bool,
) -> None:
    """A task.cancel() just after the hand-over (the wait's future resolved), or just
    before it (the future cancelled, the waiter still in line): either way the
    cancelled waiter never runs and the slot goes on."""
    import asyncio

    slots = Slots(1)
    assert slots.try_take()
    got: list[str] = []

    async def first() -> None:
        await slots.take()
        got.append("first")  # never: the cancel lands first

    async def second() -> None:
        await slots.take()
        got.append("second")

    async with asyncio.TaskGroup() as group:
        task = group.create_task(first())
        await anyio.wait_all_tasks_blocked()
        group.create_task(second())
        await anyio.wait_all_tasks_blocked()
        if cancel_first:
            task.cancel()
        slots.give()  # handed to `first` before it resumed
        if not cancel_first:
            task.cancel()
    assert got == ["second"]
    assert slots.used == 1


async def test_take_of_a_free_slot_is_a_checkpoint_and_keeps_nothing_if_cut() -> None:
    slots = Slots(1)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await slots.take()
    assert scope.cancelled_caught
    assert slots.used == 0
