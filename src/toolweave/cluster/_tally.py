"""Following sessions as their events arrive: per-session results and batch totals."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias, final

import anyio

from .._exceptions import StoreError
from ..events import CompletionReason, Event, ModelCallFinished, RunFinished, RunStarted
from ..messages import Usage
from ._records import SessionRecord, SessionStatus
from ._storelink import StoredSession
from ._tasks import BatchTask

__all__ = ["BatchStatistics", "EventSink", "SessionTracker", "Tally", "status_of"]

EventSink: TypeAlias = Callable[[str, Event], None]
"""Receives ``(session_id, event)`` for every event of every session, on the
driver's event-loop thread, each session's events in order (sessions
interleave). If it raises, that session is stopped and recorded as crashed."""


def status_of(reason: CompletionReason | None) -> SessionStatus:
    """The status of a session whose run ended for `reason`."""
    if reason is CompletionReason.COMPLETED:
        return "completed"
    if reason is CompletionReason.SUSPENDED:
        return "suspended"
    return "failed"


@dataclass(frozen=True, slots=True)
class BatchStatistics:
    """A snapshot of a batch run."""

    total: int
    """Tasks in the batch."""
    skipped: int
    """Tasks already done by an earlier run (not run again)."""
    running: int
    """Sessions running now."""
    completed: int
    """Sessions of this run that completed."""
    failed: int
    """Sessions of this run that failed, crashed or were invalid."""
    tokens: int
    """Tokens used so far by this run's sessions."""
    cost: float
    """Estimated USD spent so far by this run's finished sessions."""
    suspended: int = 0
    """Sessions of this run that suspended for a decision (not failed)."""

    @property
    def finished(self) -> int:
        """Sessions of this run that have a result line."""
        return self.completed + self.suspended + self.failed

    @property
    def remaining(self) -> int:
        """Tasks neither skipped nor finished (running or waiting)."""
        return self.total - self.skipped - self.finished


@final
class Tally:
    """Mutable batch totals; `snapshot` gives the frozen view. Loop thread only."""

    def __init__(self, total: int, skipped: int) -> None:
        self.total = total
        self.skipped = skipped
        self.running = 0
        self.completed = 0
        self.failed = 0
        self.suspended = 0
        self.tokens = 0
        self.cost = 0.0

    def snapshot(self) -> BatchStatistics:
        """The totals now."""
        return BatchStatistics(
            self.total,
            self.skipped,
            self.running,
            self.completed,
            self.failed,
            self.tokens,
            self.cost,
            self.suspended,
        )

    def count(self, record: SessionRecord) -> None:
        """Count a finished session."""
        if record.ok:
            self.completed += 1
        elif record.status == "suspended":
            self.suspended += 1
        else:
            self.failed += 1
        self.cost += record.cost


@final
class SessionTracker:
    """Turns one session's events into its `SessionRecord`, feeding the sink and tally."""

    def __init__(
        self,
        task: BatchTask,
        *,
        placement: str,
        tally: Tally,
        sink: EventSink | None,
        changed: Callable[[], None],
        stored: StoredSession | None = None,
    ) -> None:
        self.task = task
        self._stored = stored
        self._placement = placement
        self._tally = tally
        self._sink = sink
        self._changed = changed
        self._started = anyio.current_time()
        self._live_tokens = 0
        self.session_id: str | None = stored.session_id if stored else None
        """The store's session id, else the run id once the run started."""
        self.finished: RunFinished | None = None
        """The run's last event, once it arrived."""

    @property
    def stored(self) -> StoredSession | None:
        """The session in the store, if the batch has one (its backend records it)."""
        return self._stored

    def on_event(self, event: Event) -> None:
        """Take the session's next event (in order; recorded by the backend first).

        Raises:
            StoreError: if the sink raised (the session is then stopped).
        """
        if isinstance(event, RunStarted) and self._stored is None:
            self.session_id = event.run_id
        elif isinstance(event, ModelCallFinished):
            tokens = event.response.usage.total_tokens
            self._live_tokens += tokens
            self._tally.tokens += tokens
            self._changed()
        elif isinstance(event, RunFinished):
            self._tally.tokens += event.usage.total_tokens - self._live_tokens
            self._live_tokens = event.usage.total_tokens
            self.finished = event
        if self._sink is not None:
            try:
                self._sink(self.session_id or "", event)
            except Exception as exc:
                raise StoreError(f"the event sink failed: {exc}") from exc

    def _record(
        self,
        status: SessionStatus,
        reason: str,
        end: RunFinished | None = None,
    ) -> SessionRecord:
        return SessionRecord(
            self.task.task_id,
            status,
            line=self.task.line,
            session_id=self.session_id,
            completion_reason=end.reason.value if end else None,
            output=end.output if end else "",
            usage=end.usage if end else Usage(),
            cost=end.cost if end else 0.0,
            reason=reason,
            placement=self._placement,
            duration=anyio.current_time() - self._started,
            metadata=self.task.metadata,
        )

    async def result(self) -> SessionRecord:
        """The record of a session that ran to its end."""
        end = self.finished
        if end is None:
            return await self.crashed("the session ended without a RunFinished event")
        status = status_of(end.reason)
        if status != "failed":
            return self._record(status, end.detail, end)
        return self._record("failed", end.detail or end.reason.value, end)

    async def interrupted(self) -> None:
        """The batch stopped under this session: mark its stored run abandoned.

        Never raises (the batch is already unwinding; shielded, off the loop);
        it gets no result line, so a re-run runs it again.
        """
        if self._stored is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(StoreError):
                await self._stored.abandon_off_loop("the batch was interrupted")

    async def crashed(self, reason: str) -> SessionRecord:
        """The record of a session that raised or whose worker died.

        The stored session (if any, and not already ended by its recorder) is
        marked abandoned, off the loop; if the store fails too, that is added to
        the reason.
        """
        stored = self._stored
        if stored is not None:
            try:
                await stored.abandon_off_loop(reason)
            except StoreError as exc:
                reason = f"{reason} (and the session store failed: {exc})"
            if stored.recorder.failure is not None:
                reason = (
                    f"{reason} (the session store failed: {stored.recorder.failure})"
                )
        return self._record("crashed", reason)
