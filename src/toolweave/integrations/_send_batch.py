"""SendBatch: one model response's calls, scheduled although each reaches us on its own.

A framework that fans a response's tool calls out one task (or thread) per call
(LangGraph's ``Send``: ``create_agent``, ``create_react_agent(version="v2")``)
hands toolweave a batch of one at a time. The batch itself is still known: it
is the response's list of calls, and a call's place in that list is its key.
`SendBatch` admits each call as it arrives, by that place:

- a call waits for every earlier call of the batch it conflicts with (by its
  `Access`) that is expected to come or has come, until that call has left;
- it never starts while any call it conflicts with is running (whatever their
  places: a call that comes again, as a retry does, is held the same way);
- at most `cap` calls run at once; ready calls are admitted lowest place first.

So conflicting calls never overlap and run in their order in the response,
calls that do not conflict overlap, and every wait points at an earlier call or
a running one. A call that is expected but never comes (the framework left it
out) would hold the later calls that conflict with it: the caller says which
calls will come (`expected`); a call not expected is waited for only once it
has come.

Thread affinity: any. The framework may run the calls as tasks of one event
loop or on threads of its own; the state is guarded by a lock, and each
waiter is woken the way it waits (a `threading.Event`, or an `anyio.Event` set
on the waiter's own loop).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import final

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..scheduling import InterruptToken
from ..tools import Access

__all__ = ["Seat", "SendBatch", "SendBatches"]


@final
class _Waiter:
    """Wakes one waiting call, from whichever thread admits it."""

    __slots__ = ("_event", "_loop", "_thread", "admitted", "index")

    def __init__(self, index: int, *, sync: bool) -> None:
        self.index = index
        self.admitted = False
        self._thread = threading.get_ident()
        self._event: threading.Event | anyio.Event
        self._loop: anyio.lowlevel.EventLoopToken | None = None
        if sync:
            self._event = threading.Event()
        else:
            self._event = anyio.Event()
            self._loop = anyio.lowlevel.current_token()

    def wake(self) -> None:
        event = self._event
        loop = self._loop
        if loop is None or self._thread == threading.get_ident():
            event.set()  # a threading.Event, or on the waiter's own loop
            return
        # RuntimeError: that loop has ended, nobody waits any more
        with contextlib.suppress(RuntimeError):
            anyio.from_thread.run_sync(event.set, token=loop)

    def wait_sync(self) -> None:
        event = self._event
        assert isinstance(event, threading.Event)
        event.wait()

    async def wait(self) -> None:
        event = self._event
        assert isinstance(event, anyio.Event)
        await event.wait()


@final
class SendBatch:
    """The admission of one response's calls, each arriving on its own. See the module.

    `accesses[i]` is what call i touches; `expected` the places of the calls
    that will come (the others are waited for only once they come); `cap` the
    most that run at once.
    """

    def __init__(
        self, accesses: Sequence[Access], expected: Iterable[int], cap: int
    ) -> None:
        self._accesses = list(accesses)
        self._expected = frozenset(expected)
        self._cap = cap
        self._lock = threading.Lock()
        self._arrived: set[int] = set()
        self._done: set[int] = set()
        self._running: dict[int, int] = {}  # place -> how many of its calls run
        self._waiting: list[_Waiter] = []

    def __len__(self) -> int:
        return len(self._accesses)

    @property
    def running(self) -> int:
        """Calls admitted and not yet left."""
        with self._lock:
            return sum(self._running.values())

    def _conflicts(self, a: int, b: int) -> bool:
        return self._accesses[a].conflicts_with(self._accesses[b])

    def _ready(self, index: int, *, first: bool) -> bool:
        if sum(self._running.values()) >= self._cap:
            return False
        if any(self._conflicts(index, j) for j in self._running):
            return False
        if not first:  # it came again: only the running ones hold it
            return True
        return not any(
            j not in self._done
            and (j in self._expected or j in self._arrived)
            and self._conflicts(index, j)
            for j in range(index)
        )

    def _admit(self, waiter: _Waiter) -> None:
        waiter.admitted = True
        self._running[waiter.index] = self._running.get(waiter.index, 0) + 1

    def _pump(self) -> list[_Waiter]:
        """Admit every waiting call now ready, lowest place first (under the lock)."""
        woken: list[_Waiter] = []
        for waiter in sorted(self._waiting, key=lambda w: w.index):
            if self._ready(waiter.index, first=waiter.index not in self._done):
                self._admit(waiter)
                woken.append(waiter)
        for waiter in woken:
            self._waiting.remove(waiter)
        return woken

    def seat(self, places: Sequence[int]) -> Seat:
        """The seat of a call that may be at any of `places` (calls sharing an id).

        It takes the first of them not yet taken when it arrives (the first, if
        every one came already: a call that comes again). Wait on it, then
        leave it (always, in a finally).
        """
        if not places or not all(0 <= i < len(self._accesses) for i in places):
            raise IndexError(f"places {list(places)} outside a batch of {len(self)}")
        return Seat(self, tuple(places))

    def _arrive(self, places: tuple[int, ...], *, sync: bool) -> _Waiter:
        with self._lock:
            taken = self._arrived | self._done
            index = next((i for i in places if i not in taken), places[0])
            waiter = _Waiter(index, sync=sync)
            first = index not in taken
            self._arrived.add(index)
            if self._ready(index, first=first):
                self._admit(waiter)
            else:
                self._waiting.append(waiter)
        return waiter

    def _withdraw(self, waiter: _Waiter) -> bool:
        """Stop waiting (interrupted or cancelled); True if it was admitted after all."""
        with self._lock:
            if waiter.admitted:
                return True
            self._waiting.remove(waiter)
            woken = self._pump()
        for other in woken:
            other.wake()
        return False

    def _leave(self, waiter: _Waiter) -> None:
        with self._lock:
            index = waiter.index
            if waiter.admitted:
                left = self._running[index] - 1
                if left:
                    self._running[index] = left
                else:
                    del self._running[index]
            self._done.add(index)
            woken = self._pump()
        for other in woken:
            other.wake()


@final
class Seat:
    """One call's place in its `SendBatch`: ``wait`` (or ``wait_sync``), then ``leave``."""

    __slots__ = ("_batch", "_places", "_waiter")

    def __init__(self, batch: SendBatch, places: tuple[int, ...]) -> None:
        self._batch = batch
        self._places = places
        self._waiter: _Waiter | None = None

    @property
    def index(self) -> int | None:
        """The call's place in its response, once it arrived (waited)."""
        return None if self._waiter is None else self._waiter.index

    def wait_sync(self, interrupt: InterruptToken | None = None) -> bool:
        """Block until admitted: True, or False if `interrupt` was set first.

        For a thread with no event loop (a framework's sync path).
        """
        waiter = self._waiter = self._batch._arrive(self._places, sync=True)
        if waiter.admitted:
            return True
        unsubscribe = interrupt.subscribe(waiter.wake) if interrupt else _nothing
        try:
            waiter.wait_sync()
        finally:
            unsubscribe()
        return self._batch._withdraw(waiter)  # True if admitted meanwhile

    async def wait(self, interrupt: InterruptToken | None = None) -> bool:
        """Wait until admitted: True, or False if `interrupt` was set first.

        Cancelled while waiting, the call leaves its turn at once (and its
        ``leave`` frees the calls waiting for it). Checkpoint: only when it waits.
        """
        waiter = self._waiter = self._batch._arrive(self._places, sync=False)
        if waiter.admitted:
            return True
        unsubscribe = interrupt.subscribe(waiter.wake) if interrupt else _nothing
        try:
            await waiter.wait()
        except BaseException:
            if self._batch._withdraw(waiter):
                waiter.admitted = True  # it holds a turn: leave() gives it back
            raise
        finally:
            unsubscribe()
        return self._batch._withdraw(waiter)  # True if admitted meanwhile

    def leave(self) -> None:
        """The call is over (answered, failed, not run): later calls stop waiting for it."""
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self._batch._leave(waiter)


def _nothing() -> None:
    return None


@final
class SendBatches:
    """The `SendBatch` of each response, by a key the framework gives; bounded.

    A batch is kept after its calls left (up to `keep` batches, oldest dropped
    first), so a call that comes again (a retry, a resumed step) finds the
    batch that already ran its siblings instead of waiting for them anew.
    """

    def __init__(self, keep: int = 256) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._batches: OrderedDict[Hashable, SendBatch] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], SendBatch]) -> SendBatch:
        """The batch for `key`, made by `make` the first time."""
        with self._lock:
            batch = self._batches.get(key)
            if batch is None:
                batch = self._batches[key] = make()
                while len(self._batches) > self._keep:
                    self._batches.popitem(last=False)
            else:
                self._batches.move_to_end(key)
            return batch
