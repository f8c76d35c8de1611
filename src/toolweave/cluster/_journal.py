"""The batch journal: which stored session belongs to which task, and the batch's lease."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import IO, final

from .._exceptions import BatchBusyError

__all__ = ["BatchJournal", "journal_path"]


def journal_path(output: str | Path) -> Path:
    """The journal beside a batch's result file: ``out.jsonl`` -> ``out.jsonl.sessions``."""
    path = Path(output)
    return path.with_name(path.name + ".sessions")


@final
class BatchJournal:
    """One line per session the batch created in its store: ``{"task_id", "session_id"}``.

    Written (and fsynced) right after the session is created and before it
    runs, so a re-run after any crash of the driver finds the task's session
    and resumes it instead of creating a second one. Opening it takes the
    batch's lease, an exclusive ``flock`` held as long as the journal is open:
    a second driver of the same batch is refused (`BatchBusyError`), and a
    killed driver's lock goes with its process, so nothing stale blocks a
    re-run. (``flock`` is per host: two drivers on two machines sharing the
    output over NFS are not excluded by it; the per-session store leases still
    keep each session to one owner.)

    Not thread-safe: the driver's event-loop thread (or one worker thread at a
    time) uses it.
    """

    def __init__(self, output: str | Path) -> None:
        self.path = journal_path(output)
        """The journal file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle: IO[bytes] = self.path.open("a+b")
        try:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._handle.close()
            raise BatchBusyError(
                f"another driver is running this batch (it holds {self.path});"
                " wait for it to end, or give this run another --output"
            ) from exc
        except BaseException:
            self._handle.close()
            raise
        self._sessions = self._read()

    def _read(self) -> dict[str, str]:
        self._handle.seek(0)
        sessions: dict[str, str] = {}
        for line in self._handle.read().decode("utf-8", "replace").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                entry = json.loads(line)
                sessions[str(entry["task_id"])] = str(entry["session_id"])
        return sessions  # a torn last line (a crash mid-write) is skipped

    def session_of(self, task_id: str) -> str | None:
        """The stored session of `task_id` from an earlier (or this) run, if any."""
        return self._sessions.get(task_id)

    def link(self, task_id: str, session_id: str) -> None:
        """Record that `session_id` is `task_id`'s session, durably (blocking: fsync)."""
        line = json.dumps({"task_id": task_id, "session_id": session_id}).encode()
        end = self._handle.seek(0, os.SEEK_END)
        if end > 0:
            self._handle.seek(end - 1)
            if self._handle.read(1) != b"\n":
                line = b"\n" + line  # after a torn line
        self._handle.write(line + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._sessions[task_id] = session_id

    def close(self) -> None:
        """Release the batch's lease. Idempotent."""
        self._handle.close()

    def __enter__(self) -> BatchJournal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
