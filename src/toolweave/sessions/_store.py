"""SessionStore: the interface every session backend implements (SQLite is the default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..events import CompletionReason
from ..messages import Message, Usage
from ._records import (
    CallRecord,
    EventRecord,
    LeaseInfo,
    ModelCallRecord,
    RunInfo,
    RunState,
    SessionInfo,
)

__all__ = ["RunOutcome", "SessionStore"]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended, as `SessionStore.finish_run` records it."""

    state: RunState
    """FINISHED or ABANDONED."""
    _: KW_ONLY
    reason: CompletionReason | None = None
    """The completion reason (FINISHED runs)."""
    detail: str = ""
    """Why, in words."""
    usage: Usage = field(default_factory=Usage)
    """Tokens the run used."""
    cost: float = 0.0
    """USD it cost."""


@runtime_checkable
class SessionStore(Protocol):
    """Durable sessions: messages, events, tool calls, model calls, usage and cost.

    Every write is durable when the method returns (a process killed right after
    loses nothing written before), which is what lets `SessionRecorder` write a
    run as it goes. Methods block (disk I/O); an implementation must allow calls
    from any thread, one at a time or serialized internally. Every method raises
    `StoreError` when the backend fails, and for an unknown session id; a read
    whose stored data cannot be decoded raises `StoreError` too, never another
    exception.

    A session has one live owner at a time: the holder of its lease
    (`acquire_lease`), taken atomically, renewed by a heartbeat, and free once
    released or once its owner is gone (see `lease_live`). `SessionLease` wraps
    these methods.

    Optional: ``batch(writes)`` running several write calls as one transaction
    (all or none); `SessionRecorder.recording` uses it when present.
    """

    def create_session(
        self,
        *,
        workspace: str,
        model: str,
        title: str,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Create an empty session and return it."""
        ...

    def find_session(self, id_or_prefix: str) -> SessionInfo:
        """The session whose id is, or uniquely starts with, `id_or_prefix`."""
        ...

    def list_sessions(self, *, limit: int = 50) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        ...

    def begin_run(
        self,
        session_id: str,
        *,
        prompt: str,
        model: str,
        owner: str,
        write_ahead: bool = False,
    ) -> int:
        """Open the next run of a session; returns its 1-based number.

        `write_ahead`: the run is recorded with the start barrier, so a call of
        it without a RUNNING row never started (`RunInfo.write_ahead`).
        """
        ...

    def acquire_lease(
        self, session_id: str, *, owner: str, token: str, term: float
    ) -> LeaseInfo:
        """Take the session's lease for (`owner`, `token`) in one transaction.

        Free if nobody holds it, if its holder is gone, or if `token` holds it.

        Raises:
            SessionBusyError: another live owner holds it.
        """
        ...

    def renew_lease(self, session_id: str, token: str) -> None:
        """Renew the heartbeat of the lease `token` holds.

        Raises:
            SessionBusyError: `token` no longer holds it.
        """
        ...

    def release_lease(self, session_id: str, token: str) -> None:
        """Give up the lease `token` holds; nothing if it holds none."""
        ...

    def lease(self, session_id: str) -> LeaseInfo | None:
        """The session's lease as stored (live or stale), or None."""
        ...

    def finish_run(self, session_id: str, run: int, outcome: RunOutcome) -> None:
        """Record how a run ended."""
        ...

    def update_run_usage(
        self, session_id: str, run: int, usage: Usage, cost: float
    ) -> None:
        """Record the usage and cost of a run so far (before it finished)."""
        ...

    def runs(self, session_id: str) -> list[RunInfo]:
        """The session's runs, in order."""
        ...

    def append_message(self, session_id: str, message: Message, *, run: int) -> None:
        """Append one message to the session's live transcript."""
        ...

    def set_transcript(
        self, session_id: str, messages: Sequence[Message], *, run: int
    ) -> None:
        """Make the live transcript equal `messages`.

        Stored messages that are not part of the new transcript (after a
        compaction, say) are archived, never deleted.
        """
        ...

    def messages(self, session_id: str, *, archived: bool = False) -> list[Message]:
        """The live transcript in order (with `archived`, the archived messages instead)."""
        ...

    def put_call(self, record: CallRecord) -> None:
        """Insert or replace the call identified by `record.key`."""
        ...

    def calls(self, session_id: str) -> list[CallRecord]:
        """Every call, ordered by run, iteration, attempt and position."""
        ...

    def put_model_call(self, record: ModelCallRecord) -> None:
        """Insert or replace the model call of (session, run, iteration, started_at)."""
        ...

    def model_calls(self, session_id: str) -> list[ModelCallRecord]:
        """Every model call, in order."""
        ...

    def append_event(
        self,
        session_id: str,
        run: int,
        *,
        kind: str,
        at: float,
        data: Mapping[str, Any],
    ) -> None:
        """Append one event (the store numbers it: `EventRecord.seq`)."""
        ...

    def events(self, session_id: str) -> list[EventRecord]:
        """Every stored event, in order."""
        ...

    def close(self) -> None:
        """Release the backend. Idempotent."""
        ...
