"""SQLiteSessionStore: the default session store, one SQLite file in WAL mode."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, final

from .._exceptions import StoreError
from ..messages import Message, Usage
from ._blobs import BlobDirectory
from ._codec import (
    dumps,
    message_from_json,
    message_to_json,
    storable_text,
    usage_to_json,
)
from ._records import (
    CallRecord,
    EventRecord,
    ModelCallRecord,
    RunInfo,
    RunState,
    SessionInfo,
)
from ._sqlite_rows import (
    CALLS_KEYED_BY_ID,
    SCHEMA,
    SCHEMA_VERSION,
    call_from_row,
    call_params,
    event_from_row,
    model_call_from_row,
    model_call_params,
    run_from_row,
    session_from_row,
)
from ._sqlite_transcript import append_body, replace_bodies
from ._store import RunOutcome

__all__ = ["DEFAULT_BLOB_THRESHOLD", "SQLiteSessionStore"]

DEFAULT_BLOB_THRESHOLD = 16_384
"""Tool-result contents longer than this (in JSON characters) are stored as files."""

_TITLE_CHARS = 100


class _TextSafeConnection(sqlite3.Connection):
    """A connection whose text parameters are always storable.

    SQLite text is UTF-8, and a Python string may hold a lone surrogate (a
    prompt from a non-UTF-8 terminal, a title made from it): binding it would
    raise. Each one is replaced by U+FFFD here, for every statement, so no
    caller can forget; JSON bodies are escaped losslessly before (`dumps`).
    """

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if isinstance(parameters, Mapping):
            parameters = {k: _param(v) for k, v in parameters.items()}
        else:
            parameters = tuple(_param(v) for v in parameters)
        return super().execute(sql, parameters)


def _param(value: object) -> object:
    return storable_text(value) if isinstance(value, str) else value


@final
class SQLiteSessionStore:
    """Sessions in one SQLite database; large tool results as files beside it.

    The database runs in WAL mode with ``synchronous=NORMAL``: every write is
    its own committed transaction, which survives the process being killed at
    any instant (a power loss may lose the last few). Other processes may read
    while a run writes. Results whose content exceeds `blob_threshold`
    characters go to ``<db name>.blobs/`` next to the database.

    Thread-safe: one connection guarded by a lock. Blocking (disk I/O).

    Args:
        path: The database file; its directory is created if missing.
        blob_threshold: Size above which a result's content is kept as a file.

    Raises:
        StoreError: if the database cannot be opened or is not a session store.
    """

    def __init__(
        self, path: str | Path, *, blob_threshold: int = DEFAULT_BLOB_THRESHOLD
    ) -> None:
        self.path = Path(path).expanduser()
        """The database file."""
        self.blobs = BlobDirectory(
            self.path.with_name(self.path.name + ".blobs"), threshold=blob_threshold
        )
        """Where large results live."""
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path,
                check_same_thread=False,
                isolation_level=None,
                timeout=10.0,
                factory=_TextSafeConnection,
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._conn = conn
            self._migrate(conn)
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise StoreError(f"cannot open session store {self.path}: {exc}") from exc
        except StoreError:
            self.close()
            raise

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer toolweave (schema {version})"
            )
        columns = {row[1] for row in conn.execute("PRAGMA table_info(calls)")}
        if columns and "call_ref" not in columns:  # schema 1: calls keyed by id
            conn.executescript(CALLS_KEYED_BY_ID)
        conn.executescript(SCHEMA)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    # -- plumbing ---------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed on exit (rolled back on error)."""
        with self._lock:
            conn = self._open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"session store {self.path}: {exc}") from exc

    def _read(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._open().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"session store {self.path}: {exc}") from exc

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"session store {self.path} is closed")
        return self._conn

    @staticmethod
    def _touch(conn: sqlite3.Connection, session_id: str) -> None:
        cursor = conn.execute(
            "UPDATE sessions SET updated_wall = ? WHERE id = ?",
            (time.time(), session_id),
        )
        if cursor.rowcount != 1:
            raise StoreError(f"no session {session_id!r}")

    def close(self) -> None:
        """Close the connection. Idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

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
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    title,
                    workspace,
                    model,
                    now,
                    now,
                    dumps(dict(meta or {})),
                ),
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
        session_id = row["id"]
        runs = self.runs(session_id)
        count = self._read(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND position IS NOT NULL",
            (session_id,),
        )[0][0]
        return session_from_row(row, runs, count)

    # -- runs ----------------------------------------------------------------------------

    def begin_run(self, session_id: str, *, prompt: str, model: str, owner: str) -> int:
        """Open the next run of a session; returns its 1-based number."""
        with self._tx() as conn:
            self._touch(conn, session_id)
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(run), 0) FROM runs WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            run = int(last) + 1
            conn.execute(
                "INSERT INTO runs (session_id, run, prompt, model, state, owner, started_wall)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    run,
                    prompt,
                    model,
                    RunState.RUNNING.value,
                    owner,
                    time.time(),
                ),
            )
            conn.execute(
                "UPDATE sessions SET model = ? WHERE id = ?", (model, session_id)
            )
        return run

    def finish_run(self, session_id: str, run: int, outcome: RunOutcome) -> None:
        """Record how a run ended."""
        with self._tx() as conn:
            self._touch(conn, session_id)
            conn.execute(
                "UPDATE runs SET state = ?, finished_wall = ?, reason = ?, detail = ?,"
                " usage = ?, cost = ? WHERE session_id = ? AND run = ?",
                (
                    outcome.state.value,
                    time.time(),
                    outcome.reason.value if outcome.reason else None,
                    outcome.detail,
                    dumps(usage_to_json(outcome.usage)),
                    outcome.cost,
                    session_id,
                    run,
                ),
            )

    def update_run_usage(
        self, session_id: str, run: int, usage: Usage, cost: float
    ) -> None:
        """Record the usage and cost of a run so far."""
        with self._tx() as conn:
            self._touch(conn, session_id)
            conn.execute(
                "UPDATE runs SET usage = ?, cost = ? WHERE session_id = ? AND run = ?",
                (dumps(usage_to_json(usage)), cost, session_id, run),
            )

    def runs(self, session_id: str) -> list[RunInfo]:
        """The session's runs, in order."""
        rows = self._read(
            "SELECT * FROM runs WHERE session_id = ? ORDER BY run", (session_id,)
        )
        return [run_from_row(r) for r in rows]

    # -- messages ------------------------------------------------------------------------

    def append_message(self, session_id: str, message: Message, *, run: int) -> None:
        """Append one message to the live transcript."""
        body = dumps(message_to_json(message, blobs=self.blobs))
        with self._tx() as conn:
            self._touch(conn, session_id)
            append_body(conn, session_id, body, run)

    def set_transcript(
        self, session_id: str, messages: Sequence[Message], *, run: int
    ) -> None:
        """Make the live transcript equal `messages`; replaced messages are archived."""
        bodies = [dumps(message_to_json(m, blobs=self.blobs)) for m in messages]
        with self._tx() as conn:
            self._touch(conn, session_id)
            replace_bodies(conn, session_id, bodies, run)

    def messages(self, session_id: str, *, archived: bool = False) -> list[Message]:
        """The live transcript in order (with `archived`, the archived messages instead)."""
        where = (
            "position IS NULL ORDER BY id"
            if archived
            else "position IS NOT NULL ORDER BY position"
        )
        rows = self._read(
            f"SELECT body FROM messages WHERE session_id = ? AND {where}", (session_id,)
        )
        return [
            message_from_json(json.loads(r["body"]), blobs=self.blobs) for r in rows
        ]

    # -- calls, model calls, events --------------------------------------------------------

    def put_call(self, record: CallRecord) -> None:
        """Insert or replace the call identified by `record.key`."""
        params = call_params(record, self.blobs)
        columns = ", ".join(params)
        values = ", ".join(f":{name}" for name in params)
        with self._tx() as conn:
            self._touch(conn, record.session_id)
            conn.execute(
                f"INSERT OR REPLACE INTO calls ({columns}) VALUES ({values})", params
            )

    def calls(self, session_id: str) -> list[CallRecord]:
        """Every call, ordered by run, iteration, attempt and position."""
        rows = self._read(
            "SELECT * FROM calls WHERE session_id = ? ORDER BY run, iteration, attempt, idx",
            (session_id,),
        )
        return [call_from_row(r, self.blobs) for r in rows]

    def put_model_call(self, record: ModelCallRecord) -> None:
        """Insert or replace the model call of (session, run, iteration, started_at)."""
        params = model_call_params(record)
        columns = ", ".join(params)
        values = ", ".join(f":{name}" for name in params)
        with self._tx() as conn:
            self._touch(conn, record.session_id)
            conn.execute(
                f"INSERT OR REPLACE INTO model_calls ({columns}) VALUES ({values})",
                params,
            )

    def model_calls(self, session_id: str) -> list[ModelCallRecord]:
        """Every model call, in order."""
        rows = self._read(
            "SELECT * FROM model_calls WHERE session_id = ? ORDER BY run, started_at",
            (session_id,),
        )
        return [model_call_from_row(r) for r in rows]

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
        with self._tx() as conn:
            self._touch(conn, session_id)
            conn.execute(
                "INSERT INTO events (session_id, run, kind, at, data) VALUES (?, ?, ?, ?, ?)",
                (session_id, run, kind, at, dumps(dict(data))),
            )

    def events(self, session_id: str) -> list[EventRecord]:
        """Every stored event, in order."""
        rows = self._read(
            "SELECT * FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        return [event_from_row(r) for r in rows]
