"""The SQLite schema and the conversions between rows and records."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..events import CompletionReason
from ..messages import ToolCall, Usage
from ._codec import (
    BlobSink,
    block_from_json,
    block_to_json,
    dumps,
    result_from_json,
    result_to_json,
    usage_from_json,
    usage_to_json,
)
from ._owner import lease_live, owner_alive
from ._records import (
    AccessRecord,
    CallRecord,
    CallState,
    EventRecord,
    LeaseInfo,
    ModelCallRecord,
    RunInfo,
    RunState,
    SessionInfo,
)

__all__ = [
    "CALLS_KEYED_BY_ID",
    "CALLS_TABLE",
    "RUNS_WITHOUT_WRITE_AHEAD",
    "SCHEMA",
    "SCHEMA_VERSION",
    "call_from_row",
    "call_params",
    "event_from_row",
    "json_object",
    "lease_from_row",
    "model_call_from_row",
    "model_call_params",
    "run_from_row",
    "session_from_row",
]

SCHEMA_VERSION = 3
"""2: `calls` is keyed by the call's ref (`ToolCall.ref`, its position key), not its id.
3: `runs.write_ahead` (the run was recorded with the start barrier) and `leases`."""

CALLS_TABLE = """
CREATE TABLE IF NOT EXISTS calls (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    run INTEGER NOT NULL,
    iteration INTEGER NOT NULL,
    call_ref TEXT NOT NULL,
    call_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    call TEXT NOT NULL,
    state TEXT NOT NULL,
    access TEXT,
    admitted_at REAL,
    running_at REAL,
    finished_at REAL,
    result TEXT,
    PRIMARY KEY (session_id, run, iteration, call_ref, attempt)
);
"""

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    workspace TEXT NOT NULL,
    model TEXT NOT NULL,
    created_wall REAL NOT NULL,
    updated_wall REAL NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS runs (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    run INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL,
    started_wall REAL NOT NULL,
    finished_wall REAL,
    reason TEXT,
    detail TEXT NOT NULL DEFAULT '',
    usage TEXT NOT NULL DEFAULT '{}',
    cost REAL NOT NULL DEFAULT 0,
    write_ahead INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, run)
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    position INTEGER,
    run INTEGER NOT NULL,
    body TEXT NOT NULL,
    written_wall REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_live ON messages(session_id, position);
"""
    + CALLS_TABLE
    + """
CREATE TABLE IF NOT EXISTS model_calls (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    run INTEGER NOT NULL,
    iteration INTEGER NOT NULL,
    started_at REAL NOT NULL,
    model TEXT NOT NULL,
    first_chunk_at REAL,
    finished_at REAL,
    stop_reason TEXT,
    usage TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (session_id, run, iteration, started_at)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    run INTEGER NOT NULL,
    kind TEXT NOT NULL,
    at REAL NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_session ON events(session_id, seq);
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id),
    owner TEXT NOT NULL,
    token TEXT NOT NULL,
    taken_wall REAL NOT NULL,
    heartbeat_wall REAL NOT NULL,
    term REAL NOT NULL
);
"""
)

RUNS_WITHOUT_WRITE_AHEAD = (
    "ALTER TABLE runs ADD COLUMN write_ahead INTEGER NOT NULL DEFAULT 0;"
)
"""Schema 2 → 3: runs recorded before the start barrier existed read as without it."""


CALLS_KEYED_BY_ID = (
    "ALTER TABLE calls RENAME TO calls_by_id;"
    + CALLS_TABLE
    + """
INSERT INTO calls (session_id, run, iteration, call_ref, call_id, attempt, idx, call,
                   state, access, admitted_at, running_at, finished_at, result)
SELECT session_id, run, iteration, call_id, call_id, attempt, idx, call,
       state, access, admitted_at, running_at, finished_at, result FROM calls_by_id;
DROP TABLE calls_by_id;
"""
)
"""Schema 1 → 2: rebuild `calls` keyed by ref (a stored call's ref is its id)."""


def json_object(text: str) -> dict[str, Any]:
    """`text` parsed as a JSON object.

    Raises:
        ValueError: if it is not JSON, or JSON of another kind (a list, a string).
    """
    try:
        value = json.loads(text)
    except RecursionError as exc:  # nested past the parser's depth
        raise ValueError("JSON nested too deeply to read") from exc
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__} where an object belongs")
    return value


def _status(last: RunInfo | None, lease: LeaseInfo | None) -> tuple[str, str]:
    if last is None:
        return "new", ""
    if last.state is RunState.RUNNING:
        live = lease_live(lease) if lease is not None else owner_alive(last.owner)
        return ("running" if live else "crashed"), ""
    if last.state is RunState.ABANDONED:
        return "abandoned", last.detail
    return (last.reason.value if last.reason else "finished"), last.detail


def session_from_row(
    row: sqlite3.Row,
    runs: list[RunInfo],
    messages: int,
    lease: LeaseInfo | None = None,
) -> SessionInfo:
    """A `sessions` row, its runs, its live message count and its lease as a SessionInfo.

    A last run still RUNNING reads ``running`` while its lease binds (or, for a
    run recorded without a lease, while its owner may be alive), else ``crashed``.
    """
    status, detail = _status(runs[-1] if runs else None, lease)
    return SessionInfo(
        id=row["id"],
        title=row["title"],
        workspace=row["workspace"],
        model=row["model"],
        created_wall=row["created_wall"],
        updated_wall=row["updated_wall"],
        runs=len(runs),
        messages=messages,
        usage=sum((r.usage for r in runs), Usage()),
        cost=sum(r.cost for r in runs),
        status=status,
        detail=detail,
        meta=_meta(row["meta"]),
    )


def _meta(text: str) -> dict[str, Any]:
    """A session's stored meta; a damaged one reads as empty (it only ever helps)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def run_from_row(row: sqlite3.Row) -> RunInfo:
    """A `runs` row as a RunInfo."""
    reason = row["reason"]
    return RunInfo(
        session_id=row["session_id"],
        run=row["run"],
        prompt=row["prompt"],
        state=RunState(row["state"]),
        owner=row["owner"],
        started_wall=row["started_wall"],
        finished_wall=row["finished_wall"],
        reason=CompletionReason(reason) if reason else None,
        detail=row["detail"],
        usage=usage_from_json(json_object(row["usage"])),
        cost=row["cost"],
        write_ahead=bool(row["write_ahead"]) if "write_ahead" in row.keys() else False,  # noqa: SIM118 (a Row),
    )


def lease_from_row(row: sqlite3.Row) -> LeaseInfo:
    """A `leases` row as a LeaseInfo."""
    return LeaseInfo(
        session_id=row["session_id"],
        owner=row["owner"],
        token=row["token"],
        taken_wall=float(row["taken_wall"]),
        heartbeat_wall=float(row["heartbeat_wall"]),
        term=float(row["term"]),
    )


def call_params(record: CallRecord, blobs: BlobSink) -> dict[str, Any]:
    """The named parameters that store `record` in `calls`."""
    access = record.access
    result = record.result
    return {
        "session_id": record.session_id,
        "run": record.run,
        "iteration": record.iteration,
        "call_ref": record.call.ref,
        "call_id": record.call.id,
        "attempt": record.attempt,
        "idx": record.index,
        "call": dumps(block_to_json(record.call)),
        "state": record.state.value,
        "access": None
        if access is None
        else dumps({"reads": list(access.reads), "writes": list(access.writes)}),
        "admitted_at": record.admitted_at,
        "running_at": record.running_at,
        "finished_at": record.finished_at,
        "result": None
        if result is None
        else dumps(result_to_json(result, blobs=blobs)),
    }


def call_from_row(row: sqlite3.Row, blobs: BlobSink) -> CallRecord:
    """A `calls` row as a CallRecord."""
    call = block_from_json(json_object(row["call"]))
    if not isinstance(call, ToolCall):
        raise ValueError(f"a {type(call).__name__} where a tool call belongs")
    access = None
    if row["access"] is not None:
        raw = json_object(row["access"])
        access = AccessRecord(tuple(raw["reads"]), tuple(raw["writes"]))
    result = None
    if row["result"] is not None:
        result = result_from_json(json_object(row["result"]), blobs=blobs)
    return CallRecord(
        row["session_id"],
        row["run"],
        row["iteration"],
        call,
        index=row["idx"],
        attempt=row["attempt"],
        state=CallState(row["state"]),
        access=access,
        admitted_at=row["admitted_at"],
        running_at=row["running_at"],
        finished_at=row["finished_at"],
        result=result,
    )


def model_call_params(record: ModelCallRecord) -> dict[str, Any]:
    """The named parameters that store `record` in `model_calls`."""
    return {
        "session_id": record.session_id,
        "run": record.run,
        "iteration": record.iteration,
        "started_at": record.started_at,
        "model": record.model,
        "first_chunk_at": record.first_chunk_at,
        "finished_at": record.finished_at,
        "stop_reason": record.stop_reason,
        "usage": dumps(usage_to_json(record.usage)),
    }


def model_call_from_row(row: sqlite3.Row) -> ModelCallRecord:
    """A `model_calls` row as a ModelCallRecord."""
    return ModelCallRecord(
        session_id=row["session_id"],
        run=row["run"],
        iteration=row["iteration"],
        model=row["model"],
        started_at=row["started_at"],
        first_chunk_at=row["first_chunk_at"],
        finished_at=row["finished_at"],
        stop_reason=row["stop_reason"],
        usage=usage_from_json(json_object(row["usage"])),
    )


def event_from_row(row: sqlite3.Row) -> EventRecord:
    """An `events` row as an EventRecord."""
    return EventRecord(
        session_id=row["session_id"],
        run=row["run"],
        seq=row["seq"],
        kind=row["kind"],
        at=row["at"],
        data=json_object(row["data"]),
    )
