"""Running sync tool functions on worker threads under the caller's thread limiter."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

__all__ = ["run_in_worker_thread", "thread_limiter"]

T = TypeVar("T")

thread_limiter: contextvars.ContextVar[anyio.CapacityLimiter | None] = (
    contextvars.ContextVar("toolweave_thread_limiter", default=None)
)
"""The limiter sync tools use for worker threads; the Dispatcher sets it.

The Dispatcher sizes it to `max_concurrency`, so a batch of sync tools never
queues behind a small default pool. With no Dispatcher (a tool called directly)
anyio's default limiter applies.
"""


async def run_in_worker_thread(
    fn: Callable[[], T], *, abandon_on_cancel: bool = False
) -> T:
    """Run `fn` on a worker thread and return its result.

    A checkpoint. If `abandon_on_cancel`, cancellation returns at once and leaves
    the thread to finish on its own (threads cannot be stopped); otherwise
    cancellation waits for the function to return.
    """
    return await anyio.to_thread.run_sync(
        fn, abandon_on_cancel=abandon_on_cancel, limiter=thread_limiter.get()
    )
