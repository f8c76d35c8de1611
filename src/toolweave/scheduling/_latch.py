"""Latch: a one-shot flag a task may wait for, whose event is made only if one does."""

from __future__ import annotations

from typing import final

import anyio

__all__ = ["Latch"]


@final
class Latch:
    """Set once, never reset; `wait` returns at once if it is set.

    Most batches are over before anyone waits for them (a dispatch awaits its
    own admission), so the `anyio.Event` is made only by a waiter. Loop
    affinity: the event loop the waiter runs on; `set` from that loop's thread.
    """

    __slots__ = ("_event", "is_set")

    def __init__(self) -> None:
        self._event: anyio.Event | None = None
        self.is_set = False

    def set(self) -> None:
        """Set the flag and wake the waiter, if any. Idempotent."""
        self.is_set = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        """Return once the flag is set (a checkpoint only if it is not set yet)."""
        if self.is_set:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()
