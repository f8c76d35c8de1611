"""The live transcript in SQLite: appending, and replacing without deleting."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

__all__ = ["append_body", "replace_bodies"]

_INSERT = (
    "INSERT INTO messages (session_id, position, run, body, written_wall)"
    " VALUES (?, ?, ?, ?, ?)"
)


def append_body(conn: sqlite3.Connection, session_id: str, body: str, run: int) -> None:
    """Add one encoded message after the last live one (inside the caller's transaction)."""
    (last,) = conn.execute(
        "SELECT COALESCE(MAX(position), -1) FROM messages WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    conn.execute(_INSERT, (session_id, int(last) + 1, run, body, time.time()))


def replace_bodies(
    conn: sqlite3.Connection, session_id: str, bodies: Sequence[str], run: int
) -> None:
    """Make the live transcript `bodies`: keep the common prefix, archive the rest.

    Archived rows lose their position (they no longer belong to the transcript)
    but stay in the table; nothing is deleted. Inside the caller's transaction.
    """
    live = conn.execute(
        "SELECT id, body FROM messages WHERE session_id = ? AND position IS NOT NULL"
        " ORDER BY position",
        (session_id,),
    ).fetchall()
    keep = 0
    while keep < min(len(live), len(bodies)) and live[keep]["body"] == bodies[keep]:
        keep += 1
    for row in live[keep:]:
        conn.execute("UPDATE messages SET position = NULL WHERE id = ?", (row["id"],))
    now = time.time()
    for position in range(keep, len(bodies)):
        conn.execute(_INSERT, (session_id, position, run, bodies[position], now))
