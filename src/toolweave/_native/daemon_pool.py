"""Worker threads that never keep the process alive: daemons, pooled, on either backend.

Python's exit joins every non-daemon thread still running
(``threading._shutdown``). anyio's worker threads on asyncio are not daemons
(anyio chose so, for subinterpreters), so a sync tool stuck in
``time.sleep(20)`` and abandoned at its deadline held the process 20 s after
the run had returned. trio's worker threads are daemons already. So on
asyncio the sync functions toolweave runs go to a pool of its own (seed 000
§3: the pool is lazy and daemon); on trio, to trio's (through anyio).

The pool's contract is `anyio.to_thread.run_sync`'s: the function runs in a
copy of the caller's context, under the limiter (held while it is awaited);
with `abandon_on_cancel` a cancelled caller returns at once and the thread runs
on, with nobody waiting; without it cancellation waits for the function.

One difference: a function on a pool thread is not in an anyio worker thread,
so ``anyio.from_thread.run()`` without a ``token=`` (and anyio's
``check_cancelled``) do not work in it; toolweave's own tools use
`toolweave.tools.check_cancelled` (see `_threads`), and ``token=`` works from
any thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import TypeVar, cast, final

import anyio
import anyio.to_thread
import sniffio

__all__ = ["run_on_daemon_thread"]

T = TypeVar("T")

IDLE_SECONDS = 10.0
"""How long an idle pool thread waits for work before it ends (anyio's figure)."""


@final
class _Pool:
    """Idle daemon threads, reused most-recent first; shared by every event loop.

    Thread-safe. A thread takes work from its own queue; one that waited
    `IDLE_SECONDS` for nothing leaves the pool and ends.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []

    def submit(self, work: Callable[[], None]) -> None:
        """Run `work` on an idle thread, or on a new one."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(
                target=self._serve, args=(inbox,), name="toolweave worker", daemon=True
            ).start()
        inbox.put(work)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            try:
                work = inbox.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:
                        self._idle.remove(inbox)
                        return
                continue  # taken from the pool meanwhile: its work is on the way
            work()
            del work
            with self._lock:
                self._idle.append(inbox)

    def forget(self) -> None:
        """In a forked child: the parent's threads are not there."""
        self._lock = threading.Lock()
        self._idle = []


_pool = _Pool()
os.register_at_fork(after_in_child=_pool.forget)


async def run_on_daemon_thread(
    fn: Callable[[], T],
    *,
    abandon_on_cancel: bool = False,
    limiter: anyio.CapacityLimiter | None = None,
) -> T:
    """Run `fn` on a daemon worker thread and return its result (or raise its error).

    A checkpoint. On asyncio a thread of toolweave's pool, elsewhere
    `anyio.to_thread.run_sync` (trio's threads are daemons). See the module
    docstring for the contract.
    """
    if sniffio.current_async_library() != "asyncio":
        return await anyio.to_thread.run_sync(
            fn, abandon_on_cancel=abandon_on_cancel, limiter=limiter
        )
    loop = asyncio.get_running_loop()
    async with limiter or anyio.to_thread.current_default_thread_limiter():
        future: asyncio.Future[T] = loop.create_future()
        context = contextvars.copy_context()

        def deliver(value: object, error: BaseException | None) -> None:
            if future.done():  # its caller was cancelled and left
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(cast("T", value))

        def work() -> None:
            value: object = None
            error: BaseException | None = None
            try:
                value = context.run(fn)
            except BaseException as exc:  # handed to the caller, like a result
                error = exc
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits
                loop.call_soon_threadsafe(deliver, value, error)

        _pool.submit(work)
        with anyio.CancelScope(shield=not abandon_on_cancel):
            result = await future
    return result
