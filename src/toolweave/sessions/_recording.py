"""The live side of a recorder attached to a run: its writer, lease heartbeat and marks."""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import final

import anyio

from .._exceptions import StoreError
from ._lease import SessionLease
from ._writer import StoreWriter, Write

__all__ = ["Recording"]


@final
class Recording:
    """What a `SessionRecorder` holds while `recording` is open. Event-loop thread only.

    Owns the `StoreWriter` (every write of the run goes through it, in order),
    renews the lease from a heartbeat task, and keeps one mark per recorded
    event (the writer's sequence number once that event's writes were
    submitted) so a consumer can wait until the events it shows are durable.
    Marks of durable events are dropped as commits land, so they never pile up.
    """

    def __init__(
        self,
        writer: StoreWriter,
        lease: SessionLease,
        *,
        write_ahead: bool,
    ) -> None:
        self.writer = writer
        self.lease = lease
        self.write_ahead = write_ahead
        """Calls wait at the start barrier until their RUNNING row is durable."""
        self._marks: deque[int] = deque()
        self._base = 0  # index (0-based) of the event whose mark is _marks[0]
        self._events = 0
        self._renewing = False

    # -- marks ----------------------------------------------------------------------------

    def mark(self) -> None:
        """One more event was recorded: remember which writes it needs."""
        self._events += 1
        if self.writer.failure is not None:
            self._marks.clear()  # nothing more becomes durable: nobody waits
            self._base = self._events
            return
        if self.writer.durable >= self.writer.submitted and not self._marks:
            self._base = self._events  # durable already: nothing to remember
            return
        self._marks.append(self.writer.submitted)

    def committed(self, durable: int) -> None:
        """`durable` writes are committed: forget the marks they cover."""
        marks = self._marks
        while marks and marks[0] <= durable:
            marks.popleft()
            self._base += 1

    async def wait_events(self, events: int) -> None:
        """Wait until the first `events` recorded events are durable (or the store failed)."""
        index = events - 1 - self._base
        if index < 0 or index >= len(self._marks):
            return
        await self.writer.wait(self._marks[index])

    # -- writes ---------------------------------------------------------------------------

    def submit(self, write: Write) -> int:
        """Queue one write."""
        return self.writer.submit(write)

    async def heartbeat(self, scope: anyio.CancelScope) -> None:
        """Renew the lease every quarter of its term, through the writer (in order).

        Runs until `scope` is cancelled (before the lease is released, so no
        renewal ever follows the release).
        """
        with scope:
            while True:
                await anyio.sleep(self.lease.term / 4)
                if self.writer.failure is not None:
                    return
                if not self._renewing:
                    self._renewing = True
                    self.writer.submit(self._renew)

    def _renew(self) -> None:
        try:
            self.lease.renew()
        finally:
            self._renewing = False

    async def close(self, last_words: Callable[[], None] | None) -> StoreError | None:
        """Drain the writer, then release the lease (off the loop); the failure, if any.

        After a failure, `last_words` (a blocking call: the run's end as far as it
        is known) is tried once more on its own, and the lease release with it;
        their own failure is ignored (the first one is what is reported).
        """
        writer = self.writer
        if writer.failure is None:
            writer.submit(self.lease.release)
        await writer.close()
        failure = writer.failure
        if failure is not None:
            lease = self.lease

            def after_failure() -> None:
                with contextlib.suppress(StoreError):
                    if last_words is not None:
                        last_words()
                with contextlib.suppress(StoreError):
                    lease.release()

            await anyio.to_thread.run_sync(after_failure)
        return failure
