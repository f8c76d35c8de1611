"""Task groups for the batch engine, at the cost each backend can afford.

Every call of a concurrent batch runs in its own task inside a task group that
the batch owns and awaits (structured concurrency, no orphans). On trio that is
anyio's task group (a thin nursery). On asyncio, spawning through anyio's task
group costs about 20 µs per task against 3 µs for the stdlib `asyncio.TaskGroup`
(measured in bench/bench_scheduling.py), which alone would put 500 trivial calls at
6x a bare `gather`. So on asyncio the engine uses `asyncio.TaskGroup`, which is
also structured: it cancels and awaits every child when the parent is cancelled,
and anyio cancel scopes work inside its tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVarTuple

import anyio

from .alarm import on_asyncio

__all__ = ["Spawner", "open_spawner"]

Ts = TypeVarTuple("Ts")


class Spawner(Protocol):
    """What the engine needs of a task group."""

    def start_soon(
        self,
        func: Callable[[*Ts], Coroutine[object, object, object]],
        *args: *Ts,
    ) -> object:
        """Start `func(*args)` as a child task; returns the asyncio Task on asyncio."""
        ...


class _AsyncioSpawner(asyncio.TaskGroup):
    """`asyncio.TaskGroup` with the engine's `start_soon`.

    A subclass, not a wrapper entered by a generator-based context manager: that
    cost several frames and objects per batch.
    """

    def start_soon(
        self,
        func: Callable[[*Ts], Coroutine[object, object, object]],
        *args: *Ts,
    ) -> asyncio.Task[object]:
        return self.create_task(func(*args))


def open_spawner() -> AbstractAsyncContextManager[Spawner, bool | None]:
    """A task group that waits for all its children on exit (``async with``)."""
    if on_asyncio():
        return _AsyncioSpawner()
    return anyio.create_task_group()
