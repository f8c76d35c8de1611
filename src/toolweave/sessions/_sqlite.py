"""SQLiteSessionStore: the default session store, one SQLite file in WAL mode."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, final

from .._exceptions import StoreError
from ..messages import Message, Usage
from . import _sqlite_lease as lease_sql
from ._blobs import BlobDirectory
from ._codec import dumps, message_from_json, message_to_json, usage_to_json
from ._records import (
    CallRecord,
    EventRecord,
    LeaseInfo,
    ModelCallRecord,
    RunInfo,
    RunState,
    SessionInfo,
)
from ._sqlite_connect import close_at_rest, is_busy, open_read_only, open_read_write
from ._sqlite_rows import (
    CALLS_KEYED_BY_ID,
    RUNS_WITHOUT_WRITE_AHEAD,
    SCHEMA,
    SCHEMA_VERSION,
    call_from_row,
    call_params,
    event_from_row,
    json_object,
    lease_from_row,
    model_call_from_row,
    model_call_params,
    run_from_row,
    session_from_row,
)
from ._sqlite_transcript import append_body, replace_bodies
from ._store import RunOutcome

__all__ = ["DEFAULT_BLOB_THRESHOLD", "DEFAULT_BUSY_TIMEOUT", "SQLiteSessionStore"]

DEFAULT_BLOB_THRESHOLD = 16_384
"""Tool-result contents longer than this (in JSON characters) are stored as files."""

DEFAULT_BUSY_TIMEOUT = 30.0
"""Seconds a write waits for another process's lock on the store before it fails."""

_TITLE_CHARS = 100
_RETRY_FIRST_DELAY = 0.01
_RETRY_MAX_DELAY = 0.25

T = TypeVar("T")


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Each statement of `script` inside the caller's transaction (unlike `executescript`)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


@final
class SQLiteSessionStore:
    """Sessions in one SQLite database; large tool results as files beside it.

    The database runs in WAL mode with ``synchronous=NORMAL``: every write is
    a committed transaction, which survives the process being killed at any
    instant (a power loss may lose the last few). Other processes may read
    while a run writes. Results whose content exceeds `blob_threshold`
    characters go to ``<db name>.blobs/`` next to the database.

    A write that finds the database locked by another process waits for it,
    up to `busy_timeout` seconds in all, retrying as the lock allows; past
    that it fails with `StoreError` (naming the store and the lock), as does
    any other write the disk refuses (full, read-only). `batch` runs many
    writes as one transaction. With `read_only`, the store is opened so that
    nothing is written (``mode=ro``; see `open_read_only`): the read commands
    work on a store in a read-only directory, mount or copy, and every write
    method raises `StoreError`.

    A stored row that cannot be read back (its JSON is not an object, a blob
    is missing or damaged, a value is of the wrong kind) raises `StoreError`
    naming the session, the table and the row; nothing is guessed.

    Thread-safe: one connection guarded by a lock. Blocking (disk I/O): call it
    from a worker thread when an event loop must keep running
    (`SessionRecorder.recording` does).

    Args:
        path: The database file; its directory is created if missing (not with
            `read_only`).
        blob_threshold: Size above which a result's content is kept as a file.
        busy_timeout: Seconds a write may wait for another process's lock;
            None = `DEFAULT_BUSY_TIMEOUT`.
        read_only: Open for reading only; the file must exist.

    Raises:
        StoreError: if the database cannot be opened or is not a session store.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        busy_timeout: float | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path).expanduser()
        """The database file."""
        self.blobs = BlobDirectory(
            self.path.with_name(self.path.name + ".blobs"), threshold=blob_threshold
        )
        """Where large results live."""
        self.busy_timeout = (
            DEFAULT_BUSY_TIMEOUT if busy_timeout is None else busy_timeout
        )
        """Seconds a write waits for another process's lock before failing."""
        self.read_only = read_only
        """True if opened for reading only."""
        self._lock = threading.RLock()
        self._depth = 0  # > 0 inside a write transaction (changed under the lock)
        self._touched: set[str] = set()  # sessions marked updated in this transaction
        self._conn: sqlite3.Connection | None = None
        self._has_leases = True
        try:
            if read_only:
                conn = open_read_only(self.path, timeout=self.busy_timeout)
            else:
                conn = open_read_write(self.path, timeout=self.busy_timeout)
            self._conn = conn
            if read_only:
                self._check_readable(conn)
            else:
                self._migrate(conn)
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise StoreError(f"cannot open session store {self.path}: {exc}") from exc
        except StoreError:
            self.close()
            raise

    def _version(self, conn: sqlite3.Connection) -> int:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer toolweave (schema {version})"
            )
        return version

    def _migrate(self, conn: sqlite3.Connection) -> None:
        def migrate(conn: sqlite3.Connection) -> None:
            if self._version(conn) == SCHEMA_VERSION:
                return
            calls = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
            if calls and "call_ref" not in calls:  # schema 1: calls keyed by id
                _execute_script(conn, CALLS_KEYED_BY_ID)
            runs = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
            if runs and "write_ahead" not in runs:  # schema 2: before the barrier
                _execute_script(conn, RUNS_WITHOUT_WRITE_AHEAD)
            _execute_script(conn, SCHEMA)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

        self._write(migrate)

    def _check_readable(self, conn: sqlite3.Connection) -> None:
        """A read-only store is read as it is: an older schema is not migrated."""
        self._version(conn)
        tables = {
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if "sessions" not in tables:
            raise StoreError(f"{self.path} is not a session store")
        self._has_leases = "leases" in tables

    # -- plumbing ---------------------------------------------------------------------

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` in one write transaction, committed on return.

        Inside another write transaction of this thread (`batch`), `work` joins
        it. A lock held by another process is waited for and the transaction
        retried (from the start: `work` runs again) until `busy_timeout` is
        spent. Rolled back on any error.

        Raises:
            StoreError: the store is read-only or closed, the lock outlasted
                `busy_timeout`, or SQLite (or the disk) refused the write.
        """
        with self._lock:
            conn = self._open()
            if self._depth:
                return work(conn)
            if self.read_only:
                raise StoreError(f"session store {self.path} is open read-only")
            # Blocking code (a worker thread, or a caller that accepts blocking):
            # it waits in real time, as SQLite's own busy handler does.
            deadline = time.monotonic() + self.busy_timeout  # noqa: TID251
            delay = _RETRY_FIRST_DELAY
            while True:
                try:
                    return self._transaction(conn, work)
                except sqlite3.Error as exc:
                    left = deadline - time.monotonic()  # noqa: TID251
                    if not is_busy(exc) or left <= 0:
                        raise self._write_error(exc) from exc
                time.sleep(min(delay, left))  # noqa: TID251
                delay = min(delay * 2, _RETRY_MAX_DELAY)
                with contextlib.suppress(sqlite3.Error):
                    conn.execute(f"PRAGMA busy_timeout={max(1, int(left * 1000))}")

    def _transaction(
        self, conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]
    ) -> T:
        conn.execute("BEGIN IMMEDIATE")
        self._depth += 1
        self._touched = set()
        try:
            result = work(conn)
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise
        finally:
            self._depth -= 1
        return result

    def _write_error(self, exc: sqlite3.Error) -> StoreError:
        if is_busy(exc):
            return StoreError(
                f"session store {self.path}: {exc} (another process held its lock"
                f" for longer than the {self.busy_timeout:g} s a write waits)"
            )
        return StoreError(f"session store {self.path}: {exc}")

    def batch(self, writes: Sequence[Callable[[], object]]) -> None:
        """Run `writes` (calls of this store's write methods) as one transaction, in order.

        All of them are committed together, or none (the first failure rolls
        back the rest and raises). A lock is waited for as by every write.

        Raises:
            StoreError: as `_write` does, or as one of `writes` raised.
        """

        def run(conn: sqlite3.Connection) -> None:
            for write in writes:
                write()

        self._write(run)

    def _read(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._open().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"session store {self.path}: {exc}") from exc

    def _decoded(self, session_id: str, row: str, decode: Callable[[], T]) -> T:
        """`decode()`, or a StoreError naming the session and `row` if the row is damaged."""
        try:
            return decode()
        except (StoreError, ValueError, TypeError, KeyError, AttributeError) as exc:
            detail = str(exc) if isinstance(exc, StoreError | ValueError) else repr(exc)
            raise StoreError(
                f"session {session_id[:12]} in {self.path}: {row} is damaged: {detail}"
            ) from exc

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"session store {self.path} is closed")
        return self._conn

    def _touch(self, conn: sqlite3.Connection, session_id: str) -> None:
        """Mark the session updated (once per transaction); StoreError if it is unknown."""
        if session_id in self._touched:
            return
        cursor = conn.execute(
            "UPDATE sessions SET updated_wall = ? WHERE id = ?",
            (time.time(), session_id),
        )
        if cursor.rowcount != 1:
            raise StoreError(f"no session {session_id!r}")
        self._touched.add(session_id)

    def close(self) -> None:
        """Close the connection (see `close_at_rest`). Idempotent."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is None:
                return
            if self.read_only:
                conn.close()
            else:
                close_at_rest(conn)

    # -- sessions -------------------------------------------------------------------------

    def create_session(
        self,
        *,
        workspace: str,
        model: str,
        title: str,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionInfo:
        """Create an empty session and return it."""
        now = time.time()
        session_id = uuid.uuid4().hex
        title = " ".join(title.split())
        if len(title) > _TITLE_CHARS:
            title = title[: _TITLE_CHARS - 1] + "…"
        row = (session_id, title, workspace, model, now, now, dumps(dict(meta or {})))
        self._write(
            lambda conn: conn.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)", row
            )
        )
        return self.find_session(session_id)

    def find_session(self, id_or_prefix: str) -> SessionInfo:
        """The session whose id is, or uniquely starts with, `id_or_prefix`.

        Raises:
            StoreError: if no session or more than one matches.
        """
        prefix = id_or_prefix.strip().lower()
        if not prefix:
            raise StoreError("an empty session id")
        rows = self._read(
            "SELECT * FROM sessions WHERE id = ? OR id LIKE ? ESCAPE '\\' LIMIT 3",
            (prefix, prefix.replace("%", "\\%").replace("_", "\\_") + "%"),
        )
        exact = [r for r in rows if r["id"] == prefix]
        if exact:
            rows = exact
        if not rows:
            raise StoreError(f"no session {id_or_prefix!r} in {self.path}")
        if len(rows) > 1:
            raise StoreError(
                f"session id {id_or_prefix!r} is ambiguous: give more characters"
            )
        return self._info(rows[0])

    def list_sessions(self, *, limit: int = 50) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        rows = self._read(
            "SELECT * FROM sessions ORDER BY updated_wall DESC LIMIT ?", (limit,)
        )
        return [self._info(row) for row in rows]

    def _info(self, row: sqlite3.Row) -> SessionInfo:
        session_id = str(row["id"])
        runs = self.runs(session_id)
        count = self._read(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND position IS NOT NULL",
            (session_id,),
        )[0][0]
        lease = self.lease(session_id)
        return self._decoded(
            session_id,
            "its sessions row",
            lambda: session_from_row(row, runs, count, lease),
        )

    # -- leases ----------------------------------------------------------------------------

    def acquire_lease(
        self, session_id: str, *, owner: str, token: str, term: float
    ) -> LeaseInfo:
        """Take the session's lease for (`owner`, `token`), atomically.

        Free if nobody holds it, if its holder is gone (dead on this host, or no
        heartbeat for its term), or if `token` holds it already (then renewed).

        Raises:
            SessionBusyError: another live owner holds it (the message says who
                and since when).
            StoreError: the store failed, or there is no such session.
        """

        def take(conn: sqlite3.Connection) -> LeaseInfo:
            self._touch(conn, session_id)
            return lease_sql.take(conn, session_id, owner=owner, token=token, term=term)

        return self._write(take)

    def renew_lease(self, session_id: str, token: str) -> None:
        """Renew the heartbeat of the lease `token` holds.

        Raises:
            SessionBusyError: `token` no longer holds it (taken over or released).
        """
        self._write(lambda conn: lease_sql.renew(conn, session_id, token))

    def release_lease(self, session_id: str, token: str) -> None:
        """Give up the lease `token` holds; nothing if it holds none."""
        self._write(lambda conn: lease_sql.release(conn, session_id, token))

    def lease(self, session_id: str) -> LeaseInfo | None:
        """The session's lease as stored (live or stale), or None."""
        if not self._has_leases:
            return None
        rows = self._read("SELECT * FROM leases WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        return self._decoded(
            session_id, "its lease row", lambda: lease_from_row(rows[0])
        )

    # -- runs ----------------------------------------------------------------------------

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

        `write_ahead`: the run is recorded with the start barrier (see
        `RunInfo.write_ahead`).
        """

        def begin(conn: sqlite3.Connection) -> int:
            self._touch(conn, session_id)
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(run), 0) FROM runs WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            run = int(last) + 1
            conn.execute(
                "INSERT INTO runs (session_id, run, prompt, model, state, owner,"
                " started_wall, write_ahead) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    run,
                    prompt,
                    model,
                    RunState.RUNNING.value,
                    owner,
                    time.time(),
                    int(write_ahead),
                ),
            )
            conn.execute(
                "UPDATE sessions SET model = ? WHERE id = ?", (model, session_id)
            )
            return run

        return self._write(begin)

    def finish_run(self, session_id: str, run: int, outcome: RunOutcome) -> None:
        """Record how a run ended."""
        params = (
            outcome.state.value,
            time.time(),
            outcome.reason.value if outcome.reason else None,
            outcome.detail,
            dumps(usage_to_json(outcome.usage)),
            outcome.cost,
            session_id,
            run,
        )

        def finish(conn: sqlite3.Connection) -> None:
            self._touch(conn, session_id)
            conn.execute(
                "UPDATE runs SET state = ?, finished_wall = ?, reason = ?, detail = ?,"
                " usage = ?, cost = ? WHERE session_id = ? AND run = ?",
                params,
            )

        self._write(finish)

    def update_run_usage(
        self, session_id: str, run: int, usage: Usage, cost: float
    ) -> None:
        """Record the usage and cost of a run so far."""
        params = (dumps(usage_to_json(usage)), cost, session_id, run)

        def update(conn: sqlite3.Connection) -> None:
            self._touch(conn, session_id)
            conn.execute(
                "UPDATE runs SET usage = ?, cost = ? WHERE session_id = ? AND run = ?",
                params,
            )

        self._write(update)

    def runs(self, session_id: str) -> list[RunInfo]:
        """The session's runs, in order."""
        rows = self._read(
            "SELECT * FROM runs WHERE session_id = ? ORDER BY run", (session_id,)
        )
        return [
            self._decoded(session_id, f"run {r['run']}", partial(run_from_row, r))
            for r in rows
        ]

    # -- messages ------------------------------------------------------------------------

    def append_message(self, session_id: str, message: Message, *, run: int) -> None:
        """Append one message to the live transcript."""

        def append(conn: sqlite3.Connection) -> None:
            body = dumps(message_to_json(message, blobs=self.blobs))
            self._touch(conn, session_id)
            append_body(conn, session_id, body, run)

        self._write(append)

    def set_transcript(
        self, session_id: str, messages: Sequence[Message], *, run: int
    ) -> None:
        """Make the live transcript equal `messages`; replaced messages are archived."""

        def replace(conn: sqlite3.Connection) -> None:
            bodies = [dumps(message_to_json(m, blobs=self.blobs)) for m in messages]
            self._touch(conn, session_id)
            replace_bodies(conn, session_id, bodies, run)

        self._write(replace)

    def messages(self, session_id: str, *, archived: bool = False) -> list[Message]:
        """The live transcript in order (with `archived`, the archived messages instead).

        Raises:
            StoreError: a message row is damaged (named by its position and row id).
        """
        where = (
            "position IS NULL ORDER BY id"
            if archived
            else "position IS NOT NULL ORDER BY position"
        )
        rows = self._read(
            f"SELECT id, position, body FROM messages WHERE session_id = ? AND {where}",
            (session_id,),
        )
        return [self._message(session_id, r) for r in rows]

    def _message(self, session_id: str, row: sqlite3.Row) -> Message:
        where = (
            "an archived message"
            if row["position"] is None
            else f"the message at position {row['position']}"
        )
        return self._decoded(
            session_id,
            f"{where} (messages row {row['id']})",
            lambda: message_from_json(json_object(row["body"]), blobs=self.blobs),
        )

    # -- calls, model calls, events --------------------------------------------------------

    def put_call(self, record: CallRecord) -> None:
        """Insert or replace the call identified by `record.key`."""

        def put(conn: sqlite3.Connection) -> None:
            params = call_params(record, self.blobs)
            columns = ", ".join(params)
            values = ", ".join(f":{name}" for name in params)
            self._touch(conn, record.session_id)
            conn.execute(
                f"INSERT OR REPLACE INTO calls ({columns}) VALUES ({values})", params
            )

        self._write(put)

    def calls(self, session_id: str) -> list[CallRecord]:
        """Every call, ordered by run, iteration, attempt and position."""
        rows = self._read(
            "SELECT rowid, * FROM calls WHERE session_id = ?"
            " ORDER BY run, iteration, attempt, idx",
            (session_id,),
        )
        return [
            self._decoded(
                session_id,
                f"tool call {r['call_id']!r} of run {r['run']}, iteration"
                f" {r['iteration']} (calls row {r['rowid']})",
                partial(call_from_row, r, self.blobs),
            )
            for r in rows
        ]

    def put_model_call(self, record: ModelCallRecord) -> None:
        """Insert or replace the model call of (session, run, iteration, started_at)."""
        params = model_call_params(record)
        columns = ", ".join(params)
        values = ", ".join(f":{name}" for name in params)

        def put(conn: sqlite3.Connection) -> None:
            self._touch(conn, record.session_id)
            conn.execute(
                f"INSERT OR REPLACE INTO model_calls ({columns}) VALUES ({values})",
                params,
            )

        self._write(put)

    def model_calls(self, session_id: str) -> list[ModelCallRecord]:
        """Every model call, in order."""
        rows = self._read(
            "SELECT * FROM model_calls WHERE session_id = ? ORDER BY run, started_at",
            (session_id,),
        )
        return [
            self._decoded(
                session_id,
                f"a model call of run {r['run']}, iteration {r['iteration']}",
                partial(model_call_from_row, r),
            )
            for r in rows
        ]

    def append_event(
        self,
        session_id: str,
        run: int,
        *,
        kind: str,
        at: float,
        data: Mapping[str, Any],
    ) -> None:
        """Append one event."""
        row = (session_id, run, kind, at, dumps(dict(data)))

        def append(conn: sqlite3.Connection) -> None:
            self._touch(conn, session_id)
            conn.execute(
                "INSERT INTO events (session_id, run, kind, at, data) VALUES (?, ?, ?, ?, ?)",
                row,
            )

        self._write(append)

    def events(self, session_id: str) -> list[EventRecord]:
        """Every stored event, in order."""
        rows = self._read(
            "SELECT * FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return [
            self._decoded(
                session_id,
                f"event {r['seq']} ({r['kind']})",
                partial(event_from_row, r),
            )
            for r in rows
        ]

    # -- discarding ------------------------------------------------------------------------

    def delete_session(self, session_id: str) -> None:
        """Remove a session and every row of it, in one transaction.

        For a session that holds nothing worth keeping: the CLI deletes the
        session of a ``toolweave run`` that never reached a model, so
        ``toolweave sessions`` lists no empty crashed one. Every table with a
        ``session_id`` column is cleared of it (read from the schema, so a
        table added later is not missed). Large results in the shared,
        content-addressed blob directory stay (other sessions may name them).

        Raises:
            StoreError: for an unknown session id, or if the store fails.
        """

        def work(conn: sqlite3.Connection) -> int:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND name != 'sessions'"
                )
                if any(
                    column[1] == "session_id"
                    for column in conn.execute(f'PRAGMA table_info("{row[0]}")')
                )
            ]
            conn.execute("PRAGMA defer_foreign_keys = ON")
            for table in tables:
                conn.execute(
                    f'DELETE FROM "{table}" WHERE session_id = ?', (session_id,)
                )
            return conn.execute(
                "DELETE FROM sessions WHERE id = ?", (session_id,)
            ).rowcount

        if self._write(work) != 1:
            raise StoreError(f"no session {session_id!r} in {self.path}")
