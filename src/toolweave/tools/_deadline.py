"""DeadlineScope: a cancel scope with a deadline, on one shared timer per event loop.

Why: every call runs under a deadline (its tool's timeout, the Dispatcher's
per-call ceiling), and an anyio scope with a deadline arms an event-loop timer
of its own and reads the clock through sniffio. With hundreds of calls in
flight on asyncio that is hundreds of timers pushed onto, and cancelled from,
the loop's heap: measured, about half of the scheduler's cost per call.
Here the deadlines of one asyncio loop wait in one heap behind one timer that
fires at the earliest. Nor is the scope an anyio scope on asyncio (one in a
fresh task cost a task-state entry, two scope sets and two ``getpid()``
calls): it cancels its task itself with anyio's semantics (level-triggered,
shields respected; see `DeadlineScope`), reading anyio's task table only to
see shields, and falls back to an anyio scope if that table moves. On trio (and
any other backend) the scope is the backend's own with its native deadline:
trio keeps deadlines cheaply itself.

Loop affinity: a scope is entered, cancelled and left on its event loop's
thread; the asyncio timer state is per loop and never shared across threads.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import threading
import time
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, final

import anyio
import sniffio

__all__ = ["Alarm", "DeadlineScope", "Entry", "Expiring", "native_alarm", "on_asyncio"]

Entry = list[Any]
"""An alarm entry: ``[when, sequence, target or None once disarmed]``."""


class Expiring(Protocol):
    """What an alarm entry waits for: told once its time has come."""

    def expire(self) -> None:
        """The entry's time has come (called on the loop, from the alarm's timer)."""


@final
class Alarm:
    """One asyncio loop's pending deadlines and the timer set for the earliest."""

    __slots__ = ("_clock", "_handle", "_heap", "_live", "_loop", "_sequence", "_when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # The loop's clock. The stdlib loop's time() only returns time.monotonic();
        # call that directly (a loop class with its own clock keeps its own).
        standard = getattr(type(loop), "time", None) is asyncio.BaseEventLoop.time
        clock = time.monotonic if standard else loop.time  # noqa: TID251
        self._clock: Callable[[], float] = clock
        self._heap: list[Entry] = []
        self._live = 0
        self._sequence = itertools.count()
        self._handle: asyncio.TimerHandle | None = None
        self._when = math.inf

    @property
    def clock(self) -> Callable[[], float]:
        """The loop's clock, which entries' times are read on."""
        return self._clock

    def arm(self, target: Expiring, seconds: float) -> Entry:
        """Call ``target.expire()`` once `seconds` have passed; `disarm` the entry to forget it."""
        return self.arm_at(target, self._clock() + seconds)

    def arm_at(self, target: Expiring, when: float) -> Entry:
        """Call ``target.expire()`` at `when` on `clock`."""
        entry: Entry = [when, next(self._sequence), target]
        heapq.heappush(self._heap, entry)
        self._live += 1
        if when < self._when:
            self._set_timer(when)
        return entry

    def disarm(self, entry: Entry) -> None:
        """Forget an entry (a no-op once it fired)."""
        if entry[2] is None:
            return
        entry[2] = None
        self._live -= 1
        heap = self._heap
        # Disarmed entries wait for their time to be dropped; keep them few.
        if len(heap) > 64 and len(heap) > 2 * self._live:
            self._heap = [e for e in heap if e[2] is not None]
            heapq.heapify(self._heap)
        if not self._live:
            # The timer stays set: calls that start and end within one step
            # would otherwise set and cancel it every time.
            self._heap.clear()

    def _set_timer(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._when = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle, self._when = None, math.inf
        now = self._clock()
        heap = self._heap
        while heap and (heap[0][2] is None or heap[0][0] <= now):
            entry = heapq.heappop(heap)
            scope = entry[2]
            if scope is not None:
                entry[2] = None
                self._live -= 1
                scope.expire()
        if heap:
            self._set_timer(heap[0][0])


class _PerThread(threading.local):
    loop: asyncio.AbstractEventLoop | None = None
    alarm: Alarm | None = None


_here = _PerThread()


def _alarm_here() -> Alarm | None:
    """This thread's asyncio loop's alarm; None when not running under asyncio."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return None
    if loop is not _here.loop:
        # A new loop in this thread: asyncio only if sniffio agrees (trio-asyncio).
        alarm = Alarm(loop) if sniffio.current_async_library() == "asyncio" else None
        if alarm is not None and not _probed:
            _probe_anyio()
        _here.loop, _here.alarm = loop, alarm
    return _here.alarm


def on_asyncio() -> bool:
    """True when running under asyncio (sniffio is asked once per event loop).

    Never a checkpoint. The answer is the one the deadlines' per-loop alarm
    keeps, so the engine has one per-loop cache of it, not two.
    """
    return _alarm_here() is not None


def native_alarm() -> Alarm | None:
    """This asyncio loop's alarm when `DeadlineScope.adopt` works here, else None.

    None on other backends, and on asyncio when anyio's task table could not be
    read (then scopes are anyio's and must be entered in the task).
    """
    alarm = _alarm_here()
    return alarm if _task_states is not None else None


def _anyio_task_states() -> Any:
    """The task → scope table of anyio on asyncio; None if this anyio keeps no such table.

    The native path reads it (and each scope's ``shield`` and parent) only to
    learn whether the task stands inside a shielded anyio scope; without it,
    `DeadlineScope` uses an anyio scope on asyncio too (correct, slower).
    """
    try:
        from anyio._backends import _asyncio as backend

        states = backend._task_states
        probe = backend.CancelScope()
        if not hasattr(probe, "_parent_scope") or not isinstance(
            getattr(states, "data", None), dict
        ):
            return None
        return states
    except (ImportError, AttributeError):  # pragma: no cover - other anyio
        return None


# Read on the first asyncio loop (`_alarm_here`), not at import: anyio's asyncio
# backend is a costly import that `import toolweave` need not pay.
_task_states: Any = None
# The table's own dict (a WeakKeyDictionary's), read without its Python-level
# get(): anyio's state of a task (its innermost scope) or None.
_task_state_refs: dict[Any, Any] = {}
_probed = False
_ref = weakref.ref


def _probe_anyio() -> None:
    global _task_states, _task_state_refs, _probed
    _task_states = _anyio_task_states()
    _task_state_refs = getattr(_task_states, "data", {})
    _probed = True


_REASON = "Cancelled via cancel scope {:x}; reason: toolweave DeadlineScope"
"""The message of a native scope's cancellations: anyio's form, so that an
enclosing anyio scope that was cancelled meanwhile takes the exception for its
own, as it would from a nested anyio scope (anyio matches the prefix)."""

_SHIELD_POLL = (0.0, 0.001, 0.005, 0.02, 0.05)
"""Seconds between checks while the task is shielded (then the last one)."""


@final
class DeadlineScope:
    """A cancel scope that is cancelled once `seconds` have passed since it was entered.

    `seconds=None`: no deadline, only `cancel()`. Use it as anyio's
    `CancelScope`: ``with DeadlineScope(5) as scope: ...``; afterwards
    `expired` says whether the deadline (not `cancel()`) stopped the block,
    and `cancelled_caught` whether the block was cut off. Whichever of the
    two came first is the one reported.

    On asyncio the scope is not an anyio scope but delivers cancellation as
    one would (what a scope per call cost was most of the engine's overhead):
    ``task.cancel()`` on the task that entered it, again at each loop step
    while the block still runs (level-triggered), never while the task stands
    inside a shielded anyio scope entered within this block (checked again
    until it leaves it), and never to the task while it runs. On exit its own
    cancellations are withdrawn (``Task.uncancel``) and a cancellation that
    was only its own ends at the block, so a cancel from outside (a task
    group, a caller, an enclosing anyio scope, even one that came while the
    block unwound) still propagates. On trio the
    scope is trio's own, with its native deadline.
    """

    __slots__ = (
        "_alarm",
        "_baseline",
        "_called",
        "_caught",
        "_entry",
        "_known",
        "_live",
        "_outer",
        "_polls",
        "_scope",
        "_seconds",
        "_sent",
        "_task",
        "cut",
        "expired",
    )

    def __init__(
        self, seconds: float | None = None, *, task: asyncio.Task[Any] | None = None
    ) -> None:
        """`task`: on asyncio, the task that will enter the scope, if the caller knows it.

        It spares the two lookups of the running loop and task, each a
        ``getpid()`` system call in CPython's asyncio; a scope entered by any
        other task would cancel the wrong one, so pass it only when sure.
        """
        self._seconds = seconds
        loop = asyncio._get_running_loop() if task is None else task.get_loop()
        here = _here
        # _alarm_here(), without the call when the loop is the known one
        alarm = here.alarm if loop is here.loop and loop is not None else _alarm_here()
        self._alarm = alarm
        self._scope: anyio.CancelScope | None = (
            None
            if alarm is not None and _task_states is not None
            else anyio.CancelScope()
        )
        self._entry: Entry | None = None
        self._task: asyncio.Task[Any] | None = None
        self._known = task
        self._called = self._caught = self._live = False
        self._sent = 0
        self.expired = False
        """True if the deadline passed while the scope was active (and before any cancel)."""
        self.cut = False
        """True if `cancel()` came first."""

    @classmethod
    def adopt(cls, task: asyncio.Task[Any]) -> DeadlineScope:
        """The scope of a region `task` entered at its first step and is still in.

        For the batch engine, which makes a call's scope only once the call must
        be cut (its ceiling passed, its owner cancels it), not for every call:
        the call's task runs the region from its first step, so no anyio scope
        encloses it in that task and no cancel was pending when it began (a task
        cancelled before its first step never runs its body). The caller ends
        the region with ``__exit__`` in the task, as a ``with`` block would, and
        then `cancel()` or `expire()` it. Only where `native_alarm()` is not None.
        """
        if _task_states is None:
            raise RuntimeError("DeadlineScope.adopt needs the native asyncio path")
        self = cls.__new__(cls)
        self._seconds = self._alarm = self._scope = self._entry = None
        self._outer = None
        self._task = self._known = task
        self._baseline = self._sent = self._polls = 0
        self._called = self._caught = False
        self._live = True
        self.expired = self.cut = False
        return self

    def __enter__(self) -> DeadlineScope:
        seconds = self._seconds
        scope = self._scope
        if scope is not None:
            scope.__enter__()
            if seconds is not None:
                scope.deadline = anyio.current_time() + seconds
            return self
        task = self._known or asyncio.current_task()
        if task is None or self._task is not None:
            raise RuntimeError("a DeadlineScope is entered once, in a task")
        self._task = task
        state = _task_state_refs.get(_ref(task))
        self._outer = state.cancel_scope if state is not None else None
        self._baseline = task.cancelling()
        self._live = True
        if self._called:  # cancelled before it was entered: cut at once, as anyio
            self._polls = 0
            self._deliver()
        if seconds is not None:
            assert self._alarm is not None
            self._entry = self._alarm.arm(self, seconds)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        entry = self._entry
        if entry is not None:
            self._entry = None
            assert self._alarm is not None
            self._alarm.disarm(entry)
        scope = self._scope
        if scope is not None:
            try:
                return scope.__exit__(exc_type, exc, tb)
            finally:
                if self._seconds is not None and not self.cut and scope.cancel_called:
                    self.expired = True  # trio: the native deadline cancelled it
        self._live = False
        if not self._sent:
            return False
        return self._withdraw(exc)

    def _withdraw(self, exc: BaseException | None) -> bool:
        """Take back this scope's cancels; True if `exc` was only its cancellation."""
        task = self._task
        assert task is not None
        for _ in range(self._sent):
            task.uncancel()
        self._sent = 0
        if (
            exc is None
            or task.cancelling() > self._baseline
            or anyio.current_effective_deadline() == -math.inf
        ):
            return False  # done anyway, or a cancel from outside came too
        if isinstance(exc, asyncio.CancelledError):
            if not self._is_ours(exc):
                return False  # a cancellation that was pending before the block
            self._caught = True
            return True
        if isinstance(exc, BaseExceptionGroup):
            # split() takes a plain function, not a bound method (3.11)
            ours, rest = exc.split(lambda e: self._is_ours(e))
            if ours is not None:
                self._caught = True
                if rest is None:
                    return True
                raise rest
        return False

    def _is_ours(self, exc: BaseException) -> bool:
        """True if `exc` is this scope's cancellation, or one raised while handling it.

        As anyio tells its own: by the message, along the ``__context__`` chain
        (code that catches a cancellation and raises a new one keeps it there).
        """
        message = _REASON.format(id(self))
        seen: BaseException | None = exc
        while isinstance(seen, asyncio.CancelledError):
            if seen.args and seen.args[0] == message:
                return True
            seen = seen.__context__
        return False

    @property
    def cancelled_caught(self) -> bool:
        """True if the block was cut off (by the deadline or `cancel()`)."""
        scope = self._scope
        return scope.cancelled_caught if scope is not None else self._caught

    @property
    def cancel_called(self) -> bool:
        """True once the deadline passed or `cancel()` was called."""
        scope = self._scope
        return scope.cancel_called if scope is not None else self._called

    def cancel(self) -> None:
        """Cancel the block for its owner; a no-op once the deadline cut it off."""
        if not self.cancel_called:
            self.cut = True
            self._cancel()

    def expire(self) -> None:
        """The deadline passed (the shared timer calls this); a no-op after `cancel()`."""
        if not self.cancel_called:
            self.expired = True
            self._cancel()

    def _cancel(self) -> None:
        scope = self._scope
        if scope is not None:
            scope.cancel()
            return
        self._called = True
        self._polls = 0
        if self._live:
            self._deliver()

    def _deliver(self) -> None:
        """Cancel the task if it may be cancelled now; look again later while it runs."""
        task = self._task
        if not self._live or task is None or task.done():
            return
        wait = 0.0
        if task is not asyncio.current_task() and not task._must_cancel:  # type: ignore[attr-defined]
            if self._shielded(task):
                wait = _SHIELD_POLL[min(self._polls, len(_SHIELD_POLL) - 1)]
                self._polls += 1
            else:
                waiter = task._fut_waiter  # type: ignore[attr-defined]
                if waiter is None or not waiter.done():
                    task.cancel(_REASON.format(id(self)))
                    self._sent += 1
        loop = task.get_loop()
        if wait:
            loop.call_later(wait, self._deliver)
        else:
            loop.call_soon(self._deliver)

    def _shielded(self, task: asyncio.Task[Any]) -> bool:
        """True if `task` stands in a shielded anyio scope entered inside this block."""
        state = _task_state_refs.get(_ref(task))
        scope = state.cancel_scope if state is not None else None
        while scope is not None and scope is not self._outer:
            if scope.shield:
                return True
            scope = scope._parent_scope
        return False
