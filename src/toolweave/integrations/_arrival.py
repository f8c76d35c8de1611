"""ArrivalGate: the ``conflict`` policy over calls that reach us one at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import final

import anyio

from ..tools import Access

__all__ = ["ArrivalGate"]


@final
class ArrivalGate:
    """Orders calls by arrival: each waits for every earlier call it conflicts with.

    For frameworks that hand over calls one at a time, from tasks already
    running, with no view of the batch: the order is the order calls reach
    `hold`, not the model's. A call waits only for calls that arrived before it
    (running or themselves waiting), so no call ever waits for one that may never
    come. Loop affinity: one event loop.
    """

    def __init__(self) -> None:
        self._entries: list[tuple[Access, anyio.Event]] = []

    @property
    def holding(self) -> int:
        """Calls that arrived and have not left (waiting or running)."""
        return len(self._entries)

    @asynccontextmanager
    async def hold(self, access: Access) -> AsyncIterator[None]:
        """Wait until no earlier conflicting call is left, then hold until exit.

        Checkpoint: only when there is something to wait for. Cancelled while
        waiting, the call leaves at once and later calls stop waiting for it.
        """
        earlier = [done for held, done in self._entries if held.conflicts_with(access)]
        entry = (access, anyio.Event())
        self._entries.append(entry)
        try:
            for done in earlier:
                await done.wait()
            yield
        finally:
            self._entries.remove(entry)
            entry[1].set()
