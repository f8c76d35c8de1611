"""Run a callback the moment the current task next waits (the event loop's "soon")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import sniffio

__all__ = ["Canceller", "Schedule", "soon_scheduler"]

Canceller = Callable[[], None]
Schedule = Callable[[Callable[[], None]], Canceller]


def soon_scheduler() -> Schedule:
    """A scheduler for the running backend: ``schedule(fn)`` returns a canceller.

    ``fn`` runs on the event loop's thread after the current task yields — not
    before: a task that never waits never lets it run. Call from inside the
    event loop; the scheduler is bound to it.
    """
    if sniffio.current_async_library() == "asyncio":
        loop = asyncio.get_running_loop()

        def schedule_asyncio(fn: Callable[[], None]) -> Canceller:
            return loop.call_soon(fn).cancel

        return schedule_asyncio
    import trio  # anyio's other backend: imported only when it runs

    token = trio.lowlevel.current_trio_token()

    def schedule_trio(fn: Callable[[], None]) -> Canceller:
        live = [True]

        def run() -> None:
            if live[0]:
                fn()

        def cancel() -> None:
            live[0] = False

        token.run_sync_soon(run)
        return cancel

    return schedule_trio
