"""run_blocking: run an async batch from synchronous framework code."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import anyio
import sniffio

__all__ = ["run_blocking"]

T = TypeVar("T")


def run_blocking(fn: Callable[[], Awaitable[T]]) -> T:
    """Run `fn` to completion on a fresh event loop and return its value.

    On a thread with no event loop (a framework's sync path) the loop runs right
    here; on a thread whose loop is running, it runs on a helper thread (with
    this thread's context variables) and this thread blocks until it ends.
    """
    try:
        sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return anyio.run(fn)
    context = contextvars.copy_context()
    # The copy carries the caller's sniffio marker (set by anyio and pytest's anyio
    # plugin), which would make anyio.run refuse: "Already running asyncio in this
    # thread". The helper thread has no loop; say so in its copy.
    context.run(sniffio.current_async_library_cvar.set, None)

    def run() -> T:
        return context.run(anyio.run, fn)

    with ThreadPoolExecutor(1, thread_name_prefix="toolweave-sync") as pool:
        return pool.submit(run).result()
