"""InterruptToken: how a caller tells a running batch to stop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import final

import anyio

from ._loops import LoopRef, current_loop

__all__ = ["InterruptToken"]


@dataclass(eq=False, slots=True)
class _Subscriber:
    """A callback and the loop it was subscribed on (None: outside any loop)."""

    callback: Callable[[], None]
    loop: LoopRef | None
    handoff: _HandOff | None = None  # set once a cross-thread `set` queued it


@final
@dataclass(eq=False, slots=True)
class _HandOff:
    """One foreign loop's callbacks, taken by a cross-thread `set`, run once.

    Whoever claims it first (under the token's lock) runs them: the callback
    posted to the loop, or one of the subscribers' unsubscribe on that loop,
    which may come before the loop ran what was posted, and after which the
    loop may end without running it. The setting thread waits on `done`.
    """

    loop: LoopRef
    callbacks: list[Callable[[], None]]
    lock: threading.Lock
    claimed: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    error: Exception | None = None

    def claim(self) -> bool:
        """Take the callbacks to run (under the lock); False if taken already."""
        taken, self.claimed = self.claimed, True
        return not taken

    def post(self) -> bool:
        """Queue `run` on the loop; False (and dropped) if the loop has ended."""
        if self.loop.post(self.run):
            return True
        self.drop()
        return False

    def run(self) -> None:
        """On the loop: run the callbacks unless someone else has."""
        with self.lock:
            if not self.claim():
                return
        self.run_claimed()

    def run_claimed(self) -> None:
        try:
            self.error = _call_all(self.callbacks)
        finally:
            self.done.set()

    def wait(self) -> Exception | None:
        """Until the callbacks ran; if the loop ended first they never will."""
        self.loop.wait_run(self.done)
        self.drop()
        return self.error

    def drop(self) -> None:
        """What the loop has not run by now it never will: nobody may run it later."""
        with self.lock:
            self.claimed = True


@final
class InterruptToken:
    """A one-shot interrupt signal with the shape of `anyio.Event`.

    `set()` cancels what the interrupted batch may cancel *synchronously*, through
    the callbacks the Dispatcher subscribed, so no watcher task is needed.

    Thread affinity: `set` may be called from any thread. Each subscriber (and
    waiter) belongs to the event loop it subscribed on; a token may serve many
    loops, one after another or at once. On the setting thread's loop (or with
    no loop) the subscribers run synchronously inside `set`. From another
    thread (a UI thread, a timer, the caller of a framework's sync path while
    its batch runs on a loop of its own) `set` hands each loop its own
    subscribers and returns once they have run there, so cancel scopes and
    events are only ever touched on their own loop; subscribers of one loop
    run in subscription order. A loop that has ended has nothing left to
    cancel: its subscribers are dropped and `set` only marks the token. `set`
    never waits on a loop that can no longer run the hand-off: an unsubscribe
    on that loop runs what was handed to it itself. `wait`, `subscribe` and the
    unsubscriber are for the caller's own loop. The token may be created
    outside an event loop.
    """

    def __init__(self) -> None:
        self._set = False
        self._subscribers: list[_Subscriber] = []
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        """True once `set` was called."""
        return self._set

    def set(self) -> None:
        """Interrupt. Idempotent; subscribers run now, in subscription order, on their loop.

        A callback's exception is raised here once every subscriber ran.
        """
        with self._lock:
            if self._set:
                return
            self._set = True
            subscribers, self._subscribers = self._subscribers, []
            here, handoffs = self._hand_off(subscribers)
        posted = [handoff for handoff in handoffs if handoff.post()]
        error = _call_all(here)  # meanwhile the other loops run theirs
        for handoff in posted:
            error = error or handoff.wait()
        if error is not None:
            raise error

    def _hand_off(
        self, subscribers: list[_Subscriber]
    ) -> tuple[list[Callable[[], None]], list[_HandOff]]:
        """Split into callbacks to run here and one hand-off per foreign loop (locked)."""
        thread = threading.get_ident()
        here: list[Callable[[], None]] = []
        handoffs: dict[LoopRef, _HandOff] = {}
        for sub in subscribers:
            if sub.loop is None or sub.loop.thread == thread:
                here.append(sub.callback)
                continue
            handoff = handoffs.get(sub.loop)
            if handoff is None:
                handoff = handoffs[sub.loop] = _HandOff(sub.loop, [], self._lock)
            handoff.callbacks.append(sub.callback)
            sub.handoff = handoff
        return here, list(handoffs.values())

    async def wait(self) -> None:
        """Wait until set. A checkpoint."""
        event = anyio.Event()
        unsubscribe = self.subscribe(event.set)
        try:
            await event.wait()
        finally:
            unsubscribe()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on `set` (at once if already set); returns an unsubscriber.

        Call the unsubscriber on the loop `subscribe` was called on: if a
        cross-thread `set` has handed that loop its callbacks and the loop has
        not run them yet, the unsubscriber runs them (this one included), so
        the loop may end right after.
        """
        sub = _Subscriber(callback, current_loop())
        with self._lock:
            subscribed = not self._set
            if subscribed:
                self._subscribers.append(sub)
        if not subscribed:
            callback()
            return _nothing
        return lambda: self._unsubscribe(sub)

    def _unsubscribe(self, sub: _Subscriber) -> None:
        with self._lock:
            if sub in self._subscribers:
                self._subscribers.remove(sub)
                return
            handoff = sub.handoff
            if handoff is None or not handoff.claim():
                return
        handoff.run_claimed()


def _call_all(callbacks: list[Callable[[], None]]) -> Exception | None:
    """Call each in order; the first exception, once all were called."""
    error: Exception | None = None
    for callback in callbacks:
        try:
            callback()
        except Exception as exc:  # one failing callback must not skip the rest
            error = error or exc
    return error


def _nothing() -> None:
    """The unsubscriber of a callback that was called at once."""
