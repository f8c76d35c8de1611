"""DeadlineScope: a cancel scope with a deadline, on one shared timer per event loop.

Why: an anyio scope with a deadline arms an event-loop timer of its own (see
`alarm`), and one in a fresh task costs a task-state entry, two scope sets and
two ``getpid()`` calls: most of the engine's overhead per call. On asyncio the
scope is therefore not an anyio scope: it arms the loop's `Alarm` and cancels
its task itself with anyio's semantics (level-triggered, shields respected;
see `DeadlineScope`), reading anyio's task table only to see shields
(`anyio_tasks`), and falls back to an anyio scope if that table moved. On
trio (and any other backend) the scope is the backend's own with its native
deadline: trio keeps deadlines cheaply itself.

Loop affinity: a scope is entered, cancelled and left on its event loop's
thread.

Private reads (see the package docstring): ``Task._must_cancel``,
``Task._fut_waiter``, anyio's task table and ``CancelScope._parent_scope``
(`anyio_tasks`), and anyio's cancel-message form.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from types import TracebackType
from typing import Any, final

import anyio

from . import anyio_tasks
from .alarm import Alarm, Entry, alarm_here, here

__all__ = ["DeadlineScope", "native_alarm"]


def native_alarm() -> Alarm | None:
    """This asyncio loop's alarm when `DeadlineScope.adopt` works here, else None.

    None on other backends, and on asyncio when anyio's task table could not be
    read (then scopes are anyio's and must be entered in the task).
    """
    alarm = alarm_here()
    return alarm if anyio_tasks.task_states is not None else None


_ref = weakref.ref


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
        if task is not None:
            loop: asyncio.AbstractEventLoop | None = task.get_loop()
        else:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not asyncio
                loop = None
        cache = here
        # alarm_here(), without the call when the loop is the known one
        alarm = cache.alarm if loop is cache.loop and loop is not None else alarm_here()
        self._alarm = alarm
        self._scope: anyio.CancelScope | None = (
            None
            if alarm is not None and anyio_tasks.task_states is not None
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
        if anyio_tasks.task_states is None:
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
        state = anyio_tasks.refs.get(_ref(task))
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
        state = anyio_tasks.refs.get(_ref(task))
        scope = state.cancel_scope if state is not None else None
        while scope is not None and scope is not self._outer:
            if scope.shield:
                return True
            scope = scope._parent_scope
        return False
