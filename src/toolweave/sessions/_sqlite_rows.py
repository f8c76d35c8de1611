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
from ._owner import owner_alive
from ._records import (
    AccessRecord,
    CallRecord,
    CallState,
    EventRecord,
    ModelCallRecord,
    RunInfo,
    RunState,
    SessionInfo,
)

__all__ = [
    "CALLS_KEYED_BY_ID",
    "CALLS_TABLE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "call_from_row",
    "call_params",
    "event_from_row",
    "model_call_from_row",
    "model_call_params",
    "run_from_row",
    "session_from_row",
]

SCHEMA_VERSION = 2
"""2: `calls` is keyed by the call's ref (`ToolCall.ref`, its position key), not its id."""

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
"""
)


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


def _status(last: RunInfo | None) -> tuple[str, str]:
    if last is None:
        return "new", ""
    if last.state is RunState.RUNNING:
        return ("running" if owner_alive(last.owner) else "crashed"), ""
    if last.state is RunState.ABANDONED:
        return "abandoned", last.detail
    return (last.reason.value if last.reason else "finished"), last.detail


def session_from_row(
    row: sqlite3.Row, runs: list[RunInfo], messages: int
) -> SessionInfo:
    """A `sessions` row, its runs and its live message count as a SessionInfo."""
    status, detail = _status(runs[-1] if runs else None)
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
    )


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
        usage=usage_from_json(json.loads(row["usage"])),
        cost=row["cost"],
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
    call = block_from_json(json.loads(row["call"]))
    assert isinstance(call, ToolCall)
    access = None
    if row["access"] is not None:
        raw = json.loads(row["access"])
        access = AccessRecord(tuple(raw["reads"]), tuple(raw["writes"]))
    result = None
    if row["result"] is not None:
        result = result_from_json(json.loads(row["result"]), blobs=blobs)
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
        usage=usage_from_json(json.loads(row["usage"])),
    )


def event_from_row(row: sqlite3.Row) -> EventRecord:
    """An `events` row as an EventRecord."""
    return EventRecord(
        session_id=row["session_id"],
        run=row["run"],
        seq=row["seq"],
        kind=row["kind"],
        at=row["at"],
        data=json.loads(row["data"]),
    )
