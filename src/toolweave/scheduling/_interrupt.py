"""InterruptToken: how a caller tells a running batch to stop."""

from __future__ import annotations

from collections.abc import Callable
from typing import final

import anyio

__all__ = ["InterruptToken"]


@final
class InterruptToken:
    """A one-shot interrupt signal with the shape of `anyio.Event`.

    `set()` cancels what the interrupted batch may cancel *synchronously*, through
    the callbacks the Dispatcher subscribed, so no watcher task is needed.
    Loop affinity: use it from the event-loop thread (`set` from another thread
    via `anyio.from_thread.run_sync`). It may be created outside an event loop.
    """

    def __init__(self) -> None:
        self._set = False
        self._event: anyio.Event | None = None
        self._callbacks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        """True once `set` was called."""
        return self._set

    def set(self) -> None:
        """Interrupt. Idempotent; subscribers run now, in subscription order."""
        if self._set:
            return
        self._set = True
        if self._event is not None:
            self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    async def wait(self) -> None:
        """Wait until set. A checkpoint."""
        if self._set:
            await anyio.lowlevel.checkpoint()
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on `set` (at once if already set); returns an unsubscriber."""
        if self._set:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unsubscribe
