"""Result lines: one JSON object per finished session, appended as each one ends."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias, final

from ..messages import Usage

__all__ = ["RecordWriter", "SessionRecord", "SessionStatus", "load_records"]

SessionStatus: TypeAlias = Literal[
    "completed", "suspended", "failed", "crashed", "invalid"
]
"""``completed``: the run ended COMPLETED. ``suspended``: it ended SUSPENDED,
waiting for a person's decision (``--on-ask suspend``): stored, not failed,
resumed with ``toolweave resume``, never re-run by the batch. ``failed``: it
ended for another reason (error, budget, max iterations, ...). ``crashed``: it
could not run or its process died. ``invalid``: the task line could not be
used."""

_STATUSES = ("completed", "suspended", "failed", "crashed", "invalid")
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """The result of one session of a batch, as written to the output JSONL."""

    task_id: str
    """The task's id (what a re-run matches on)."""
    status: SessionStatus
    """How it went, in one word."""
    _: KW_ONLY
    line: int = 0
    """The task's line number in the tasks file."""
    session_id: str | None = None
    """The run id (as in the session store); None if the run never started."""
    completion_reason: str | None = None
    """The run's `CompletionReason` value; None if the run never finished."""
    output: str = ""
    """The final text."""
    usage: Usage = field(default_factory=Usage)
    """Tokens used."""
    cost: float = 0.0
    """Estimated USD."""
    reason: str = ""
    """Why it did not complete (the run's detail, or the error)."""
    placement: str = "local"
    """Where it ran: ``local`` or ``ray``."""
    duration: float = 0.0
    """Seconds from start to result, as the driver saw it."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The task's metadata, copied."""

    @property
    def ok(self) -> bool:
        """True for a completed session."""
        return self.status == "completed"

    @property
    def settled(self) -> bool:
        """True if a re-run leaves it alone, even with ``--retry-failed``.

        A completed session, or a suspended one: it waits for a decision, and
        running its task again would repeat what ran before it suspended.
        """
        return self.status == "completed" or self.status == "suspended"

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object."""
        return {
            "task_id": self.task_id,
            "status": self.status,
            "line": self.line,
            "session_id": self.session_id,
            "completion_reason": self.completion_reason,
            "output": self.output,
            "usage": {name: getattr(self.usage, name) for name in _USAGE_FIELDS},
            "cost": self.cost,
            "reason": self.reason,
            "placement": self.placement,
            "duration": round(self.duration, 6),
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionRecord:
        """Read a record written by `to_json`. Raises KeyError/TypeError/ValueError if malformed."""
        usage = data.get("usage") or {}
        status = data["status"]
        if status not in _STATUSES:
            raise ValueError(f"unknown status {status!r}")
        return cls(
            str(data["task_id"]),
            status,
            line=int(data.get("line", 0)),
            session_id=data.get("session_id"),
            completion_reason=data.get("completion_reason"),
            output=str(data.get("output", "")),
            usage=Usage(**{k: int(usage.get(k, 0)) for k in _USAGE_FIELDS}),
            cost=float(data.get("cost", 0.0)),
            reason=str(data.get("reason", "")),
            placement=str(data.get("placement", "local")),
            duration=float(data.get("duration", 0.0)),
            metadata=dict(data.get("metadata") or {}),
        )


def load_records(path: str | Path) -> dict[str, SessionRecord]:
    """The records in an output file by task id (the last one wins); {} if it does not exist.

    Lines that are not valid records (a line torn by a crash mid-write) are
    skipped, so their tasks run again.
    """
    records: dict[str, SessionRecord] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return records
    for line in text.splitlines():
        try:
            record = SessionRecord.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        records[record.task_id] = record
    return records


@final
class RecordWriter:
    """Appends records to the output JSONL, one line each, flushed at once.

    Only the driver writes. If the file ends in a torn line (an earlier crash),
    a newline is added first so the next record starts a line of its own.
    Not thread-safe: call it from one thread (the event loop's).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        """The output file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = self._ends_torn()
        self._handle: IO[str] = self.path.open("a", encoding="utf-8")
        if torn:
            self._handle.write("\n")

    def _ends_torn(self) -> bool:
        try:
            with self.path.open("rb") as handle:
                handle.seek(0, 2)
                if handle.tell() == 0:
                    return False
                handle.seek(-1, 2)
                return handle.read(1) != b"\n"
        except FileNotFoundError:
            return False

    def write(self, record: SessionRecord) -> None:
        """Append `record` as one line and flush it."""
        self._handle.write(json.dumps(record.to_json(), ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        """Close the file. Idempotent."""
        self._handle.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
