"""What the session has read: the read-before-edit guard, stale reads, re-read detection.

Built on `SessionState.read_files` (a thread-safe `ReadLedger`). A
span is ``(offset, shown)``: the 1-based first line and how many lines were
shown, with None meaning "through the end of the file". A write records the
span `WRITE_SPAN`, which covers no read, so the file counts as known for the
next edit but a later read still returns its content.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..._exceptions import ToolError
from .._context import ReadRecord, SessionState, ShownResult

__all__ = [
    "WRITE_SPAN",
    "Fingerprint",
    "changed_read_files",
    "fingerprint",
    "read_fingerprints",
    "record_read",
    "record_write",
    "require_fresh_read",
    "span_covered",
    "still_shown",
]

Fingerprint = tuple[int, int]
"""A file's (mtime in ns, size): what "changed on disk" is judged by."""

WRITE_SPAN: tuple[int, int | None] = (0, 0)
"""The span a write records: known to the session, but no lines were shown."""

_READ_PATHS = "toolweave.builtin.read_paths"
"""Key in `SessionState.values` of the set of paths read (for change hints)."""


def fingerprint(st: os.stat_result) -> Fingerprint:
    """The fingerprint of a stat result."""
    return (st.st_mtime_ns, st.st_size)


def _record_fingerprint(record: ReadRecord) -> Fingerprint:
    return (record.mtime_ns, record.size)


def span_covered(
    span: tuple[int, int | None], spans: Iterable[tuple[int, int | None]]
) -> bool:
    """True if the lines of `span` were all shown by one of `spans`."""
    offset, shown = span
    for old_offset, old_shown in spans:
        if old_offset < 1 or old_offset > offset:
            continue
        if old_shown is None:
            return True
        if shown is not None and offset + shown <= old_offset + old_shown:
            return True
    return False


def record_read(
    state: SessionState,
    path: Path,
    st: os.stat_result,
    span: tuple[int, int | None],
    shown: ShownResult | None = None,
) -> None:
    """Remember that `span` of `path` was shown while the file had stat `st`.

    `shown`: the result that showed it (so a re-read can be told whether the
    model still sees it, `still_shown`).
    """
    state.read_files.record(
        path, mtime_ns=st.st_mtime_ns, size=st.st_size, span=span, shown=shown
    )
    with state.lock:
        state.values.setdefault(_READ_PATHS, set()).add(path)


def still_shown(
    state: SessionState, record: ReadRecord, span: tuple[int, int | None]
) -> bool:
    """Whether the lines of `span`, unchanged since `record`, are in what the model sees.

    With a transcript view (an agent run), only a result that showed them and
    is in the run's transcript counts: not one of another run on the same
    agent, nor one compacted away or replaced by a preview (issue 24, item 10).
    Without one, the ledger's spans are trusted (the caller owns the
    conversation).
    """
    view = state.transcript
    if view is None:
        return span_covered(span, record.ranges)
    return any(
        span_covered(span, (shown.span,)) and view.shows(shown.length, shown.digest)
        for shown in record.shown
    )


def record_write(state: SessionState, path: Path) -> None:
    """Remember the file as just written by this session (no re-read needed)."""
    st = path.stat()
    state.read_files.record(
        path, mtime_ns=st.st_mtime_ns, size=st.st_size, span=WRITE_SPAN
    )
    with state.lock:
        state.values.setdefault(_READ_PATHS, set()).add(path)


def require_fresh_read(
    state: SessionState, path: Path, st: os.stat_result, rel: str
) -> None:
    """Refuse to modify a file the session has not read, or that changed since.

    Raises:
        ToolError: the file was never read in this session, or its mtime or
            size differ from what the last read (or write) saw.
    """
    record = state.read_files.get(path)
    if record is None:
        raise ToolError(
            f"{rel} has not been read in this session. Read it first with the "
            "read tool, then retry the change."
        )
    if _record_fingerprint(record) != fingerprint(st):
        raise ToolError(
            f"{rel} changed on disk since you last read it (by a command or "
            "another program). Read it again, then retry the change against "
            "its current content."
        )


def read_fingerprints(state: SessionState) -> dict[Path, Fingerprint | None]:
    """The current on-disk fingerprint of every file read so far (None: gone)."""
    with state.lock:
        paths = list(state.values.get(_READ_PATHS, ()))
    result: dict[Path, Fingerprint | None] = {}
    for path in paths:
        try:
            result[path] = fingerprint(path.stat())
        except OSError:
            result[path] = None
    return result


def changed_read_files(
    before: dict[Path, Fingerprint | None], after: dict[Path, Fingerprint | None]
) -> list[Path]:
    """Files read earlier whose fingerprint differs between two snapshots, sorted."""
    return sorted(p for p, fp in before.items() if after.get(p, fp) != fp)
