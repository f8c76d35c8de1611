"""InterruptToken: how a caller tells a running batch to stop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import final

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["InterruptToken"]


@dataclass(frozen=True, slots=True)
class _Home:
    """The event loop a token's waiters and subscribers live on."""

    thread: int
    loop: anyio.lowlevel.EventLoopToken


@final
class InterruptToken:
    """A one-shot interrupt signal with the shape of `anyio.Event`.

    `set()` cancels what the interrupted batch may cancel *synchronously*, through
    the callbacks the Dispatcher subscribed, so no watcher task is needed.

    Thread affinity: `set` may be called from any thread. The token's home is
    the event loop that first waits on it or subscribes to it; from another
    thread (a UI thread, a timer, the caller of a framework's sync path while
    its batch runs on a loop of its own) `set` hands the work to that loop and
    returns once the subscribers have run there, so cancel scopes and events
    are only ever touched on their own loop. A loop that has already ended has
    nothing left to cancel: then `set` only marks the token. `wait` and
    `subscribe` are for the home loop. The token may be created outside an
    event loop.
    """

    def __init__(self) -> None:
        self._set = False
        self._event: anyio.Event | None = None
        self._callbacks: list[Callable[[], None]] = []
        self._home: _Home | None = None
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        """True once `set` was called."""
        return self._set

    def set(self) -> None:
        """Interrupt. Idempotent; subscribers run now, in subscription order, on the home loop."""
        if self._set:
            return
        home = self._home
        if home is not None and home.thread != threading.get_ident():
            try:
                anyio.from_thread.run_sync(self._fire, token=home.loop)
            except RuntimeError:  # that loop has ended (trio's RunFinishedError too)
                self._fire()
            return
        self._fire()

    def _fire(self) -> None:
        with self._lock:
            if self._set:
                return
            self._set = True
            callbacks, self._callbacks = self._callbacks, []
            event = self._event
        if event is not None:
            event.set()
        for callback in callbacks:
            callback()

    async def wait(self) -> None:
        """Wait until set. A checkpoint."""
        with self._lock:
            if not self._set:
                self._settle()
                if self._event is None:
                    self._event = anyio.Event()
            event = self._event
        if event is None:
            await anyio.lowlevel.checkpoint()
            return
        await event.wait()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on `set` (at once if already set); returns an unsubscriber."""
        with self._lock:
            subscribed = not self._set
            if subscribed:
                self._settle()
                self._callbacks.append(callback)
        if not subscribed:
            callback()
            return lambda: None

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unsubscribe

    def _settle(self) -> None:
        """Make the calling loop the token's home, if it has none (under the lock)."""
        if self._home is None:
            try:
                loop = anyio.lowlevel.current_token()
            except RuntimeError:  # no event loop here: a plain sync subscriber
                return
            self._home = _Home(threading.get_ident(), loop)
