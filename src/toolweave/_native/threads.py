"""Running sync tool functions on worker threads, and accounting for abandoned ones.

A thread cannot be stopped. When a call that runs one reaches its deadline
(its tool's timeout, or the Dispatcher's per-call ceiling) the call is answered
at once and the thread is *abandoned*: it runs on to its end with nobody waiting
(issue 13, item 3). `WorkerThreads` counts those threads per host so the
Dispatcher can report them and stop piling more up.

Every such thread is a daemon (`_daemon_pool`): an abandoned one never keeps
the process alive after the run returned. A function that can stop early
calls `check_cancelled` now and then: it raises once its caller abandoned it.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar, cast, final

import anyio

from .daemon_pool import run_on_daemon_thread

__all__ = [
    "AbandonRecord",
    "ThreadAbandoned",
    "WorkerThreads",
    "abandoning_threads",
    "abandons_here",
    "check_cancelled",
    "current_zone",
    "run_in_worker_thread",
    "worker_threads",
]

T = TypeVar("T")


@final
class WorkerThreads:
    """One host's worker threads: the limiter they run under and the abandoned ones.

    Thread-safe: abandoned threads report their end from their own thread.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._limiter: anyio.CapacityLimiter | None = None
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)
        self._abandoned_now = 0
        self._abandoned_total = 0

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """Bounds threads running on behalf of waiting calls (sized to the host cap).

        Made on first use, in the event loop that uses it (most hosts never run
        a sync tool, and a limiter is not free to make).
        """
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self._limit)
        return self._limiter

    @property
    def abandoned_now(self) -> int:
        """Abandoned threads still running."""
        return self._abandoned_now

    @property
    def abandoned_total(self) -> int:
        """Threads abandoned since the host was created."""
        return self._abandoned_total

    def _abandoned(self) -> None:
        with self._lock:
            self._abandoned_now += 1
            self._abandoned_total += 1

    def _ended_one(self) -> None:
        with self._lock:
            self._abandoned_now -= 1
            self._ended.notify_all()

    def wait_abandoned_ended(self, timeout: float | None = None) -> bool:
        """Block until no abandoned thread runs; False if `timeout` passed first.

        Blocking: call it from a thread (``anyio.to_thread.run_sync``) or at exit.
        """
        with self._ended:
            return self._ended.wait_for(lambda: self._abandoned_now == 0, timeout)


worker_threads: contextvars.ContextVar[WorkerThreads | None] = contextvars.ContextVar(
    "toolweave_worker_threads", default=None
)
"""The host's threads, set by the Dispatcher for the calls it runs.

With no Dispatcher (a tool called directly) anyio's default limiter applies and
abandoned threads are not counted by any host.
"""


class AbandonRecord:
    """The zone one call's work runs in: are cancelled worker threads abandoned, how many were.

    The zone follows the call into the tasks it starts and the worker threads
    they run (a context variable), which makes it the one per-call state the
    runtime carries there: the execution layer's declaration audit keeps its
    scope in it too (a subclass), so an audited call sets one context variable,
    not two.
    """

    __slots__ = ("abandons", "count")

    def __init__(self, abandons: bool = True) -> None:
        self.abandons = abandons
        """True: a cancelled worker thread is abandoned (a deadline); False: waited for."""
        self.count = 0
        """Worker threads abandoned in the zone so far."""


_zone: contextvars.ContextVar[AbandonRecord | None] = contextvars.ContextVar(
    "toolweave_abandon_zone", default=None
)


def current_zone() -> contextvars.ContextVar[AbandonRecord | None]:
    """The context variable holding the zone of the running call (None outside any)."""
    return _zone


def abandons_here() -> bool:
    """True if a worker thread cancelled here would be abandoned (see `abandoning_threads`)."""
    zone = _zone.get()
    return zone is not None and zone.abandons


@final
class abandoning_threads:  # lower case: used like the function it was
    """Within the block, a cancelled worker thread is abandoned instead of waited for.

    Used around a call that runs under a deadline: at the deadline the call must
    be answered, whatever its thread does. The record counts what was abandoned;
    pass one of your own (its `abandons` says whether threads are abandoned)
    to carry more per-call state. A class rather than a ``@contextmanager``
    generator: every call with a deadline enters one, and the generator
    machinery cost more than the zone itself.
    """

    __slots__ = ("_record", "_reset")

    def __init__(self, record: AbandonRecord | None = None) -> None:
        self._record = AbandonRecord() if record is None else record
        self._reset: contextvars.Token[AbandonRecord | None] | None = None

    def __enter__(self) -> AbandonRecord:
        self._reset = _zone.set(self._record)
        return self._record

    def __exit__(self, *exc_info: object) -> None:
        if self._reset is not None:
            _zone.reset(self._reset)
            self._reset = None


class ThreadAbandoned(BaseException):
    """Raised by `check_cancelled` in a worker thread whose caller abandoned it.

    A BaseException, like the cancellations of asyncio and trio, so a tool's
    ``except Exception`` does not swallow it; nobody receives it (the caller
    has left), it only ends the thread's work early.
    """


class _Running(threading.local):
    job: _Job | None = None


_running = _Running()


def check_cancelled() -> None:
    """Raise `ThreadAbandoned` if the worker thread's caller abandoned this work.

    For long loops in functions run by `run_in_worker_thread` (the built-in
    readers check per directory or file): an interrupted or timed-out call
    then stops its thread promptly instead of running on. Elsewhere (not in
    such a thread) it does nothing. Cheap: a thread-local and a flag.
    """
    job = _running.job
    if job is not None and job.abandoned:
        raise ThreadAbandoned


class _Job:
    """One function on a worker thread; knows whether it was abandoned mid-run."""

    __slots__ = ("_lock", "abandoned", "finished", "fn", "started", "threads")

    def __init__(self, fn: Callable[[], object], threads: WorkerThreads | None) -> None:
        self.fn = fn
        self.threads = threads
        self._lock = threading.Lock()
        self.started: bool = False
        self.finished: bool = False
        self.abandoned: bool = False

    def run(self) -> object:
        with self._lock:
            if self.abandoned:  # cancelled before it began: never run it
                return None
            self.started = True
        outer, _running.job = _running.job, self
        try:
            return self.fn()
        finally:
            _running.job = outer
            if self._finish() and self.threads is not None:
                self.threads._ended_one()

    def _finish(self) -> bool:
        """Mark the function done; True if it had been abandoned meanwhile."""
        with self._lock:
            self.finished = True
            return self.abandoned

    def abandon(self) -> bool:
        """Called on cancellation: True if the thread is left running."""
        with self._lock:
            self.abandoned = True
            running = self.started and not self.finished
        if running and self.threads is not None:
            self.threads._abandoned()
        return running


async def run_in_worker_thread(
    fn: Callable[[], T], *, abandon_on_cancel: bool = False
) -> T:
    """Run `fn` on a (daemon) worker thread and return its result.

    A checkpoint. On cancellation the thread is abandoned (left to finish on its
    own, counted by the host) if `abandon_on_cancel`, or inside an
    `abandoning_threads` zone (a deadline); otherwise cancellation waits for `fn`
    to return. A function cancelled before its thread began never runs.
    """
    zone = _zone.get()
    threads = worker_threads.get()
    abandon = abandon_on_cancel or (zone is not None and zone.abandons)
    job = _Job(fn, threads)
    try:
        result = await run_on_daemon_thread(
            job.run,
            abandon_on_cancel=abandon,
            limiter=threads.limiter if threads is not None else None,
        )
    except BaseException:
        if abandon and not job.finished and job.abandon() and zone is not None:
            zone.count += 1
        raise
    return cast("T", result)  # job.run returns fn's value
