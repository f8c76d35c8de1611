"""The event loop a subscriber lives on: post it a callback, tell when it has ended.

`InterruptToken.set` from another thread hands callbacks to their loop without
blocking on it (anyio's ``from_thread.run_sync`` waits for a loop that may end
with the callback still queued, and then never returns), so it needs the
loop's own non-blocking hand-off: asyncio's ``call_soon_threadsafe``, trio's
``TrioToken.run_sync_soon`` (public API of each).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast, final

import sniffio

if TYPE_CHECKING:
    import trio

__all__ = ["POLL_SECONDS", "LoopRef", "current_loop", "wait_unless"]

POLL_SECONDS = 0.05
"""How often a wait on an asyncio loop looks whether the loop was closed."""


@final
@dataclass(frozen=True, slots=True)
class LoopRef:
    """One running event loop and the thread it runs on.

    Equal for the same loop, so callbacks can be grouped by their loop.
    """

    thread: int
    native: object  # an asyncio.AbstractEventLoop or a trio.lowlevel.TrioToken

    def post(self, fn: Callable[[], None]) -> bool:
        """Queue `fn` on the loop without waiting; False if the loop has ended."""
        if isinstance(self.native, asyncio.AbstractEventLoop):
            try:
                self.native.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop is closed
                return False
            return True
        import trio  # the other backend: imported only when it runs

        try:
            cast("trio.lowlevel.TrioToken", self.native).run_sync_soon(fn)
        except trio.RunFinishedError:
            return False
        return True

    def wait_run(self, done: threading.Event) -> None:
        """Wait until `done` is released by a posted callback, or the loop has ended.

        trio runs every callback it accepted before its run returns, so there
        `done` is always released. An asyncio loop drops what is still queued
        when it is closed (``asyncio.run`` closes it right after its last
        step) and says so only by `is_closed`: the wait looks every
        `POLL_SECONDS`. A loop that is stopped but not closed may run again:
        the wait goes on.
        """
        loop = self.native
        if isinstance(loop, asyncio.AbstractEventLoop):
            wait_unless(done, loop.is_closed)
        else:
            done.wait()


def wait_unless(done: threading.Event, ended: Callable[[], bool]) -> None:
    """Wait for `done`; give up once `ended()` (asked every `POLL_SECONDS`)."""
    while not done.wait(POLL_SECONDS):
        if ended():
            return


def current_loop() -> LoopRef | None:
    """The event loop running on this thread; None outside one (or another library's)."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None
    native: object
    try:
        if library == "asyncio":
            native = asyncio.get_running_loop()
        elif library == "trio":
            import trio

            native = trio.lowlevel.current_trio_token()
        else:
            return None
    except RuntimeError:  # a marker copied into a thread with no loop running
        return None
    return LoopRef(threading.get_ident(), native)
