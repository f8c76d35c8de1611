"""StoreWriter: a run's store writes, in order, on a worker thread, never on the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import final

import anyio
import anyio.lowlevel
import anyio.to_thread

from .._exceptions import StoreError
from ._store import SessionStore

__all__ = ["StoreWriter", "Write"]

_GATHER_STEPS = 1

Write = Callable[[], object]
"""One blocking store call (a method of the store, its arguments bound)."""


@final
class StoreWriter:
    """Applies queued writes to a store in submission order, off the event loop.

    `submit` queues a write and returns its sequence number at once; the
    `pump` task hands everything queued to one worker thread call, as one
    transaction when the store offers ``batch`` (all or none), and counts it
    durable once that returns. So writes are batched into as few transactions
    as the store's speed allows, and their order is kept. `wait` awaits the
    durability of a given write (the start barrier, the ``--json`` consumer).

    The first write that fails (the store's bounded wait for a lock ran out, the
    disk is full or read-only) makes the writer failed for good: `failure` holds
    the error, `on_failure` is called once, every waiter is woken, and nothing
    submitted later is written: what is durable stays a prefix of what was
    submitted, never a store with a hole in it.

    Event-loop thread only (the worker thread runs only the writes). The
    writer's thread is its own (a one-token limiter), so tools that fill the
    default thread pool never hold a write back.
    """

    def __init__(
        self,
        store: SessionStore,
        *,
        on_failure: Callable[[StoreError], None] | None = None,
        on_commit: Callable[[int], None] | None = None,
    ) -> None:
        self._store = store
        batch = getattr(store, "batch", None)
        self._batch: Callable[[list[Write]], object] | None = (
            batch if callable(batch) else None
        )
        self._on_failure = on_failure
        self._on_commit = on_commit
        self._queue: list[Write] = []
        self.submitted = 0
        """Writes submitted so far (the last one's sequence number)."""
        self.durable = 0
        """Writes committed so far (a prefix of the submitted ones)."""
        self.failure: StoreError | None = None
        """The error that stopped the writer, once one did."""
        self._wake = anyio.Event()
        self._progress = anyio.Event()
        self._closing = False
        self._stopped = anyio.Event()
        self._limiter = anyio.CapacityLimiter(1)

    def submit(self, write: Write) -> int:
        """Queue `write`; its sequence number. Dropped (not written) once failed."""
        self.submitted += 1
        if self.failure is None:
            self._queue.append(write)
            self._wake.set()
        return self.submitted

    async def wait(self, seq: int) -> bool:
        """Wait until write `seq` is durable: True, or False if the writer failed first."""
        while self.durable < seq:
            if self.failure is not None or self._stopped.is_set():
                return False
            await self._progress.wait()
        return True

    async def pump(self) -> None:
        """Write what is queued, batch after batch, until `close`. Run it as a task.

        Shielded from cancellation: what was submitted before a cancel (the
        abandonment a cancel records, say) is still written, and a transaction
        is never cut; it ends when `close` is called (or the writer failed), so
        its owner must call `close` (`SessionRecorder.recording` always does).
        Each batch waits at most the store's bounded wait for a lock.
        """
        with anyio.CancelScope(shield=True):
            await self._pump()

    async def _pump(self) -> None:
        try:
            while True:
                if not self._queue:
                    if self._closing or self.failure is not None:
                        return
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    for _ in range(_GATHER_STEPS):  # let the loop add what it is
                        await anyio.lowlevel.checkpoint()  # about to, to this batch
                    continue
                writes, self._queue = self._queue, []
                try:
                    await anyio.to_thread.run_sync(
                        self._commit, writes, limiter=self._limiter
                    )
                except StoreError as exc:
                    self._fail(exc)
                except Exception as exc:  # a bug in a write: the record stops honestly
                    self._fail(StoreError(f"recording failed: {exc!r}"))
                else:
                    self.durable += len(writes)
                    if self._on_commit is not None:
                        self._on_commit(self.durable)
                self._notify()
        finally:
            self._stopped.set()
            self._notify()

    def _commit(self, writes: list[Write]) -> None:
        if self._batch is not None and len(writes) > 1:
            self._batch(writes)
            return
        for write in writes:
            write()

    def _fail(self, exc: StoreError) -> None:
        self.failure = exc
        self._queue = []
        if self._on_failure is not None:
            self._on_failure(exc)

    def _notify(self) -> None:
        self._progress.set()
        self._progress = anyio.Event()

    async def close(self) -> None:
        """Write everything submitted (unless failed), then stop the pump. Idempotent."""
        self._closing = True
        self._wake.set()
        await self._stopped.wait()
