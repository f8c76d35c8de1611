"""ripgrep's JSON report of a content search, shown line by line as the Python engine shows it.

ripgrep's plain output prints a matching line whole, however long (a 1 MB
minified file is one 1 MB output line). With ``--json`` each matching line
comes with the byte offsets of its matches, so the line can be shown as
`match_line` shows it: a window around each match, the rest cut with a
marker. Records are read with bounded memory: one over `MAX_RECORD_BYTES` is
skipped with a note naming its file, and the whole report stops after
`MAX_REPORT_BYTES`.

Which files are binary is grep's rule, not ripgrep's (`TextFiles`): ripgrep
runs with ``--text`` and a file it reports is dropped if its first
`SNIFF_BYTES` make it binary by `searched_as`, as the Python engine skips it. ripgrep's own
rule (stop at the first NUL anywhere, and drop the matches in that buffer)
answered "No matches" for a text file with a stray NUL far in (a log padded
with NULs after a crash, a dump), whose match the Python engine found.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio.abc

from ..._exceptions import ToolError
from ..._native.threads import run_in_worker_thread
from ._grep_lines import COUNTED_MATCHES, MAX_WINDOWS, context_line, match_line
from ._grep_text import searched_as
from ._longline import MAX_LINE_CHARS, MAX_SCAN_LINE_BYTES
from ._textfile import SNIFF_BYTES, open_regular

__all__ = ["MAX_RECORD_BYTES", "MAX_REPORT_BYTES", "TextFiles", "read_content_report"]

MAX_RECORD_BYTES = MAX_SCAN_LINE_BYTES
"""Largest JSON record (one line and its matches) read; a larger one is skipped."""

MAX_REPORT_BYTES = 4 * MAX_SCAN_LINE_BYTES
"""ripgrep's report past this is not read (the head limit usually stops sooner)."""


class TextFiles:
    """Whether a file ripgrep reported is text by grep's rule (`searched_as`).

    Paths are as ripgrep prints them (relative to the workspace root, its
    working directory); each file is looked at once. A file that cannot be
    opened again (gone since, a name not valid UTF-8) counts as text: ripgrep
    read it, and dropping its lines would hide a match. Blocking: call it on a
    worker thread.
    """

    def __init__(self, root: Path) -> None:
        self._root = root
        self._seen: dict[str, bool] = {}

    def __call__(self, rel: str) -> bool:
        known = self._seen.get(rel)
        if known is None:
            known = self._seen[rel] = self._sniff(rel)
        return known

    def _sniff(self, rel: str) -> bool:
        try:
            with open_regular(self._root / rel, rel) as stream:
                return searched_as(stream.read(SNIFF_BYTES)) is not None
        except (OSError, ToolError):
            return True


def _data(field: Mapping[str, Any]) -> bytes:
    """A JSON ``{"text": ...}`` or ``{"bytes": <base64>}`` field as bytes."""
    if "text" in field:
        return str(field["text"]).encode("utf-8", errors="replace")
    try:
        return base64.b64decode(str(field.get("bytes", "")))
    except (binascii.Error, ValueError):
        return b""


def _columns(raw: bytes, offsets: list[int]) -> list[int]:
    """Character columns (0-based) of the byte `offsets` (ascending) of `raw`."""
    columns: list[int] = []
    byte = char = 0
    for offset in offsets:
        char += len(raw[byte:offset].decode("utf-8", errors="replace"))
        byte = offset
        columns.append(char)
    return columns


def _char_spans(raw: bytes, submatches: list[Any]) -> list[tuple[int, int]]:
    """The first `MAX_WINDOWS` matches as character [start, stop) spans."""
    points: list[int] = []
    for match in submatches[:MAX_WINDOWS]:
        points += [int(match["start"]), int(match["end"])]
    order = sorted(set(points))
    column = dict(zip(order, _columns(raw, order), strict=True))
    return [
        (column[a], column[b]) for a, b in zip(points[::2], points[1::2], strict=True)
    ]


class _Report:
    """Turns records into output lines, at most `limit` of them."""

    def __init__(self, limit: int, context: int, is_text: TextFiles) -> None:
        self.limit = limit
        self.context = context
        self.lines: list[str] = []
        self.overflow = False
        """True once a line past `limit` was seen."""
        self.path = ""
        self._binary = False
        """True while the records are of a file grep counts as binary."""
        self._is_text = is_text
        self._last: tuple[str, int] | None = None

    def records(self, batch: list[bytes | None]) -> None:
        """`record` each of `batch` in order, None meaning one `skipped` (a worker thread)."""
        for raw in batch:
            if raw is None:
                self.skipped()
            else:
                self.record(raw)

    def _add(self, line: str) -> None:
        if len(self.lines) < self.limit:
            self.lines.append(line)
        else:
            self.overflow = True

    def record(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:
            return
        kind, data = message.get("type"), message.get("data") or {}
        if kind == "begin":
            self.path = _data(data.get("path") or {}).decode("utf-8", errors="replace")
            self._binary = not self._is_text(self.path)
        if self._binary:
            self._binary = kind != "end"
            return
        if kind in ("match", "context"):
            self._line(kind == "match", data)

    def skipped(self) -> None:
        if self._binary:
            return
        self._add(
            f"[note: a line of {self.path} that matched is too long for ripgrep's"
            f" report of it to be read here (over {MAX_RECORD_BYTES:,} bytes); use"
            f" bash, e.g. `rg -o -b PATTERN {self.path}`]"
        )

    def _line(self, matched: bool, data: Mapping[str, Any]) -> None:
        path = _data(data.get("path") or {}).decode("utf-8", errors="replace")
        number = int(data.get("line_number") or 0)
        raw = _data(data.get("lines") or {}).rstrip(b"\n").rstrip(b"\r")
        text = raw.decode("utf-8", errors="replace")
        if self.context and self._last is not None and self._last != (path, number - 1):
            self._add("--")
        self._last = (path, number)
        if not matched:
            shown = context_line(text, rel=path, number=number)
            self._add(f"{path}-{number}-{shown}")
            return
        submatches = list(data.get("submatches") or [])
        if len(text) > MAX_LINE_CHARS:
            spans = _char_spans(raw, submatches)
            count = min(len(submatches), COUNTED_MATCHES + 1)
            text = match_line(text, spans, count=count, rel=path, number=number)
        self._add(f"{path}:{number}:{text}")


async def read_content_report(
    stream: anyio.abc.ByteReceiveStream, limit: int, context: int, is_text: TextFiles
) -> tuple[list[str], bool]:
    """Up to `limit` output lines from ripgrep's ``--json`` report, and whether that was all.

    Stops early (returning False) once there is more than `limit` lines or
    more than `MAX_REPORT_BYTES` in all. Each newline is looked for only in
    the bytes that just arrived, so a huge record costs linear time. The
    records of a chunk are turned into lines on a worker thread (`is_text`
    opens the files they name).
    """
    report = _Report(limit, context, is_text)
    record = bytearray()
    skipping = False
    received = 0
    async for chunk in stream:
        received += len(chunk)
        batch: list[bytes | None] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not skipping:
                record += chunk[start:end]
                batch.append(bytes(record))
            skipping = False
            record.clear()
            start = end + 1
        if not skipping:
            record += chunk[start:]
            if len(record) > MAX_RECORD_BYTES:
                skipping = True
                record.clear()
                batch.append(None)
        if batch:
            await run_in_worker_thread(partial(report.records, batch))
        if report.overflow or received > MAX_REPORT_BYTES:
            return report.lines, False
    if record and not skipping:
        await run_in_worker_thread(partial(report.records, [bytes(record)]))
    return report.lines, not report.overflow
