"""SessionLease: one live owner per session, enforced in the store."""

from __future__ import annotations

import uuid
import weakref
from typing import final

from ._owner import current_owner
from ._records import LeaseInfo
from ._store import SessionStore

__all__ = ["DEFAULT_LEASE_TERM", "SessionLease"]

DEFAULT_LEASE_TERM = 60.0
"""Seconds without a heartbeat after which a session's lease may be taken over."""

# Leases `prepare_resume` took in this process that no recorder has taken up yet:
# store -> session id -> lease (see `SessionLease.hand_over` and `take_over`).
_handed: weakref.WeakKeyDictionary[SessionStore, dict[str, SessionLease]] = (
    weakref.WeakKeyDictionary()
)


@final
class SessionLease:
    """The right to run one session, held by one process (`acquire`).

    Taken atomically in the store (one transaction that reads the lease row
    and writes it), so of two processes resuming one session at once exactly
    one gets it; the other gets `SessionBusyError` naming the holder and since
    when. The holder renews it (`renew`; `SessionRecorder.recording` does so
    off the event loop while the run lives) and releases it when the run ends.
    A successor may take it over when the holder is gone: dead on this host,
    or silent for longer than `term` seconds (a crashed host, a reused pid).

    Every method blocks (disk I/O). Not thread-safe; one task uses it at a time.
    """

    def __init__(self, store: SessionStore, info: LeaseInfo) -> None:
        self.store = store
        """Where it is held."""
        self.session_id = info.session_id
        """The session."""
        self.owner = info.owner
        """``host:pid`` of this holder."""
        self.token = info.token
        """This holding's identity in the store."""
        self.term = info.term
        """Seconds without a heartbeat after which a successor may take over."""
        self.released = False
        """True once `release` gave it up."""

    @classmethod
    def acquire(
        cls,
        store: SessionStore,
        session_id: str,
        *,
        owner: str | None = None,
        term: float = DEFAULT_LEASE_TERM,
    ) -> SessionLease:
        """Take the lease of `session_id` for `owner` (default: this process).

        Raises:
            SessionBusyError: another live owner holds it.
            StoreError: the store failed, or there is no such session.
        """
        info = store.acquire_lease(
            session_id,
            owner=owner or current_owner(),
            token=uuid.uuid4().hex,
            term=term,
        )
        return cls(store, info)

    def hand_over(self) -> None:
        """Leave it for the next recorder of this session in this process (`take_over`).

        What `prepare_resume` does, so a recorder made without ``lease=`` runs
        the resumed session under the lease the plan took, instead of being
        refused by it.
        """
        _handed.setdefault(self.store, {})[self.session_id] = self

    @staticmethod
    def take_over(store: SessionStore, session_id: str) -> SessionLease | None:
        """The lease handed over for `session_id` in `store`, once; None if there is none."""
        leases = _handed.get(store)
        if leases is None:
            return None
        lease = leases.pop(session_id, None)
        return None if lease is None or lease.released else lease

    def claimed(self) -> None:
        """Someone took it up explicitly: it is no longer waiting for `take_over`."""
        leases = _handed.get(self.store)
        if leases is not None and leases.get(self.session_id) is self:
            del leases[self.session_id]

    def renew(self) -> None:
        """Renew the heartbeat.

        Raises:
            SessionBusyError: it was lost (a successor took it over, or it was
                released): this holder must stop writing the session.
            StoreError: the store failed.
        """
        self.store.renew_lease(self.session_id, self.token)

    def release(self) -> None:
        """Give it up. Idempotent.

        Raises:
            StoreError: the store failed (it frees anyway once this process is
                gone, or `term` seconds after its last heartbeat).
        """
        if not self.released:
            self.store.release_lease(self.session_id, self.token)
            self.released = True

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"SessionLease({self.session_id[:12]}, {self.owner}, {state})"
