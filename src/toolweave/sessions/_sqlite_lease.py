"""Session leases in SQLite: taken, renewed and released inside the caller's transaction."""

from __future__ import annotations

import sqlite3
import time

from .._exceptions import SessionBusyError
from ._owner import lease_live, owner_alive
from ._records import LeaseInfo, RunState
from ._sqlite_rows import lease_from_row

__all__ = ["busy_message", "release", "renew", "take"]


def _when(wall: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(wall))


def busy_message(session_id: str, lease: LeaseInfo, now: float) -> str:
    """Who holds `lease`, since when, and when it frees: the refusal a second owner gets."""
    return (
        f"session {session_id[:12]} is being run by {lease.owner} since"
        f" {_when(lease.taken_wall)} (last heartbeat {max(0.0, now - lease.heartbeat_wall):.0f} s"
        f" ago); it is free once that run ends, or {lease.term:g} s after its last"
        " heartbeat if that process is gone"
    )


def _current(conn: sqlite3.Connection, session_id: str) -> LeaseInfo | None:
    row = conn.execute(
        "SELECT * FROM leases WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else lease_from_row(row)


def _unleased_live_run(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The owner of a RUNNING last run that has no lease (recorded before leases), if alive."""
    row = conn.execute(
        "SELECT state, owner FROM runs WHERE session_id = ? ORDER BY run DESC LIMIT 1",
        (session_id,),
    ).fetchone()
    if row is None or row["state"] != RunState.RUNNING.value:
        return None
    owner = str(row["owner"])
    return owner if owner_alive(owner) else None


def take(
    conn: sqlite3.Connection, session_id: str, *, owner: str, token: str, term: float
) -> LeaseInfo:
    """Take the lease of `session_id` for (`owner`, `token`). Inside a write transaction.

    Free if nobody holds it, if its holder is gone (`lease_live` is False), or
    if `token` holds it already (then it is renewed).

    Raises:
        SessionBusyError: another live owner holds it, or (a run recorded before
            leases existed) the session's last run is RUNNING in a live process.
    """
    now = time.time()
    held = _current(conn, session_id)
    if held is not None and held.token != token and lease_live(held, now=now):
        raise SessionBusyError(busy_message(session_id, held, now))
    if held is None:
        legacy = _unleased_live_run(conn, session_id)
        if legacy is not None:
            raise SessionBusyError(
                f"session {session_id[:12]} is being run by {legacy} (a live process)"
            )
    taken = held.taken_wall if held is not None and held.token == token else now
    conn.execute(
        "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, owner, token, taken, now, term),
    )
    return LeaseInfo(
        session_id=session_id,
        owner=owner,
        token=token,
        taken_wall=taken,
        heartbeat_wall=now,
        term=term,
    )


def renew(conn: sqlite3.Connection, session_id: str, token: str) -> None:
    """Renew the heartbeat of the lease `token` holds. Inside a write transaction.

    Raises:
        SessionBusyError: `token` no longer holds it (a successor took it over
            after this holder fell silent past the term).
    """
    cursor = conn.execute(
        "UPDATE leases SET heartbeat_wall = ? WHERE session_id = ? AND token = ?",
        (time.time(), session_id, token),
    )
    if cursor.rowcount == 1:
        return
    now = time.time()
    held = _current(conn, session_id)
    if held is None:
        raise SessionBusyError(f"the lease of session {session_id[:12]} was released")
    raise SessionBusyError(
        "this process lost its lease: " + busy_message(session_id, held, now)
    )


def release(conn: sqlite3.Connection, session_id: str, token: str) -> None:
    """Give up the lease `token` holds (nothing if it holds none). Inside a transaction."""
    conn.execute(
        "DELETE FROM leases WHERE session_id = ? AND token = ?", (session_id, token)
    )
