"""ArrivalGate: the ``conflict`` policy over calls that reach us one at a time."""

from __future__ import annotations

from types import TracebackType
from typing import final

import anyio

from ..tools import Access

__all__ = ["ArrivalGate"]


@final
class _Entry:
    """One held call; `done` is made only when a later call has to wait for it."""

    __slots__ = ("access", "done")

    def __init__(self, access: Access) -> None:
        self.access = access
        self.done: anyio.Event | None = None


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
        self._entries: list[_Entry] = []

    @property
    def holding(self) -> int:
        """Calls that arrived and have not left (waiting or running)."""
        return len(self._entries)

    def hold(self, access: Access) -> _Hold:
        """``async with gate.hold(access):`` waits for every earlier conflicting call.

        Checkpoint: only when there is something to wait for. Cancelled while
        waiting, the call leaves at once and later calls stop waiting for it.
        Cheap for the common call that conflicts with nothing: no event, no
        generator, one scan of the calls held.
        """
        return _Hold(self, access)

    def _arrive(self, access: Access) -> tuple[_Entry, list[anyio.Event]]:
        waits: list[anyio.Event] = []
        for held in self._entries:
            if held.access.conflicts_with(access):
                if held.done is None:
                    held.done = anyio.Event()
                waits.append(held.done)
        entry = _Entry(access)
        self._entries.append(entry)
        return entry, waits

    def _leave(self, entry: _Entry) -> None:
        self._entries.remove(entry)
        if entry.done is not None:
            entry.done.set()


@final
class _Hold:
    __slots__ = ("_access", "_entry", "_gate")

    def __init__(self, gate: ArrivalGate, access: Access) -> None:
        self._gate = gate
        self._access = access
        self._entry: _Entry | None = None

    async def __aenter__(self) -> None:
        entry, waits = self._gate._arrive(self._access)
        self._entry = entry
        try:
            for done in waits:
                await done.wait()
        except BaseException:
            self._entry = None
            self._gate._leave(entry)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entry, self._entry = self._entry, None
        if entry is not None:
            self._gate._leave(entry)
