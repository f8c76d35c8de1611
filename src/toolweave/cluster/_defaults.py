"""Where a batch writes unless told (the result file, the session store), and its one-line tally."""

from __future__ import annotations

import os
from pathlib import Path

from ..sessions import SessionStore, SQLiteSessionStore
from ._tally import BatchStatistics

__all__ = ["default_output_path", "describe_statistics", "open_default_store"]


def default_output_path(tasks: Path) -> Path:
    """Where results go unless told: ``tasks.jsonl`` -> ``tasks.results.jsonl``."""
    return tasks.with_name(tasks.stem + ".results.jsonl")


def open_default_store(path: str | None) -> SessionStore:
    """SQLite at `path`, else ``$TOOLWEAVE_HOME/sessions.db`` (``~/.toolweave``)."""
    home = Path(os.environ.get("TOOLWEAVE_HOME") or "~/.toolweave").expanduser()
    return SQLiteSessionStore(Path(path).expanduser() if path else home / "sessions.db")


def describe_statistics(stats: BatchStatistics) -> str:
    """One line: done, suspended (if any), running, failed, skipped, tokens and cost."""
    parts = [
        f"done {stats.completed}",
        f"running {stats.running}",
        f"failed {stats.failed}",
    ]
    if stats.suspended:
        parts.insert(1, f"suspended {stats.suspended}")
    if stats.skipped:
        parts.append(f"skipped {stats.skipped}")
    parts.append(f"{stats.tokens:,} tokens")
    parts.append(f"${stats.cost:.4f}")
    return " · ".join(parts)
