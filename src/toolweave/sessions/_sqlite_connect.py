"""Opening and closing the SQLite file: read-write in WAL mode, or read-only anywhere."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._exceptions import StoreError
from ._codec import storable_text

__all__ = ["close_at_rest", "is_busy", "open_read_only", "open_read_write"]

_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


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


def is_busy(exc: sqlite3.Error) -> bool:
    """True if `exc` says another connection holds a lock (worth waiting for)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    text = str(exc)
    return "locked" in text or "busy" in text


def _connect(target: str, *, uri: bool, timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target,
        uri=uri,
        check_same_thread=False,
        isolation_level=None,
        timeout=timeout,
        factory=_TextSafeConnection,
    )
    conn.row_factory = sqlite3.Row
    return conn


def open_read_write(path: Path, *, timeout: float) -> sqlite3.Connection:
    """The database at `path` (created if missing) in WAL mode, ``synchronous=NORMAL``.

    Raises:
        sqlite3.Error, OSError: if it cannot be opened or written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = _connect(str(path), uri=False, timeout=timeout)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


def open_read_only(path: Path, *, timeout: float) -> sqlite3.Connection:
    """The database at `path` opened so that nothing is written, wherever it lies.

    ``mode=ro`` reads a database whose writers closed it (it rests in rollback
    mode, see `close_at_rest`) and one in WAL mode whose ``-wal`` and ``-shm``
    files exist (a live or crashed writer), even in a directory or on a mount
    this process cannot write. One case is left, a WAL database at rest without
    those files (written by an older toolweave, or closed while another
    connection was open) in a directory nobody can write: SQLite would have to
    create ``-shm`` to read it. Then, and only then, it is opened as
    ``immutable``, which is true there: no writer can be at work, since a writer
    needs the ``-wal`` file this directory cannot hold.

    Raises:
        StoreError: if there is no database at `path` or it cannot be read.
    """
    if not path.is_file():
        raise StoreError(f"no session database at {path}")
    base = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        return _probed(base, timeout)
    except sqlite3.OperationalError as exc:
        if not _unwritable_wal_at_rest(path):
            raise StoreError(f"cannot read session store {path}: {exc}") from exc
    try:
        return _probed(base + "&immutable=1", timeout)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read session store {path}: {exc}") from exc


def _probed(target: str, timeout: float) -> sqlite3.Connection:
    conn = _connect(target, uri=True, timeout=timeout)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _unwritable_wal_at_rest(path: Path) -> bool:
    siblings = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    return not os.access(path.parent, os.W_OK) and not any(p.exists() for p in siblings)


def close_at_rest(conn: sqlite3.Connection) -> None:
    """Close a read-write connection, leaving the file readable from read-only places.

    As the last connection it switches the database back to rollback mode
    (checkpointing the WAL and removing ``-wal`` and ``-shm``), so a read-only
    directory, mount or copy of it can be read with ``mode=ro``; the next writer
    turns WAL on again. With other connections open the switch is refused at once
    (no wait) and the file stays in WAL mode for them. Never raises.
    """
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA busy_timeout=0")
        conn.execute("PRAGMA journal_mode=DELETE")
    with contextlib.suppress(sqlite3.Error):
        conn.close()
