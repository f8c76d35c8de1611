"""The pure-Python search behind `grep` when ripgrep is not installed.

Its output has ripgrep's format (``path:line:text``, context lines as
``path-line-text``, groups separated by ``--``), so the model sees the same
result either way. Which files are text is the same rule (`searched_as`, UTF-16
files with a byte-order mark decoded as ripgrep does). Differences: Python
regular-expression syntax (the `regex` package, a superset of `re`) instead
of Rust's, .gitignore files are not honoured (VCS directories are still
skipped), and a line over `MAX_SCAN_LINE_BYTES` is searched only in its first
part (a note says so; ripgrep has no such limit).

Python's `re` holds the GIL for a whole match, and a pattern the model wrote
can backtrack for hours (``(a|aa)+$`` on a long line): the event loop, every
other call's timeout and the user's Ctrl-C would all wait for it. Here each
line is matched with the GIL released and under a time limit
(`LINE_SECONDS`); a line that exceeds it ends the search with an error that
tells the model why.
"""

from __future__ import annotations

import codecs
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

import regex

from ..._exceptions import ToolError
from ._grep_lines import COUNTED_MATCHES, context_line, match_line
from ._grep_text import Utf16Lines, searched_as
from ._longline import MAX_SCAN_LINE_BYTES, LineReader, LineSource
from ._textfile import SNIFF_BYTES, open_regular
from ._walk import compile_glob, walk_files
from ._workspace import Workspace

__all__ = ["LINE_SECONDS", "GrepQuery", "PatternTooSlow", "python_grep"]

LINE_SECONDS = 2.0
"""Longest one line may take to match before the search gives up."""


class PatternTooSlow(Exception):
    """The pattern took longer than `LINE_SECONDS` on one line (catastrophic backtracking)."""


@dataclass(frozen=True, slots=True)
class GrepQuery:
    """One search, as both engines take it."""

    regex: str
    """The pattern."""
    start: Path
    """Resolved file or directory to search."""
    mode: str
    """``files_with_matches``, ``content`` or ``count``."""
    glob: str | None = None
    """Only files whose path matches this glob."""
    ignore_case: bool = False
    """Case-insensitive matching."""
    context: int = 0
    """Lines of context around each match (content mode)."""


def _spans(
    pattern: regex.Pattern[str], text: str, number: int, rel: str, *, all_of: bool
) -> list[tuple[int, int]]:
    """The [start, stop) offsets of the line's first matches; each search without the GIL.

    With `all_of`, up to `COUNTED_MATCHES` + 1 of them (content mode shows
    them); else at most the first (a yes/no is enough).
    """
    try:
        if not all_of:
            found = pattern.search(text, concurrent=True, timeout=LINE_SECONDS)
            return [] if found is None else [found.span()]
        matches = pattern.finditer(text, concurrent=True, timeout=LINE_SECONDS)
        return list(islice(_as_ripgrep_finds(matches), COUNTED_MATCHES + 1))
    except TimeoutError:
        raise PatternTooSlow(
            f"the pattern took over {LINE_SECONDS:g} s to match line {number}"
            f" of {rel} and the search was stopped (catastrophic backtracking:"
            " avoid nested or overlapping repetition such as (a+)+ or (a|aa)+)"
        ) from None


def _as_ripgrep_finds(
    matches: Iterator[regex.Match[str]],
) -> Iterator[tuple[int, int]]:
    """The spans of `matches` less an empty one right where the previous one ended.

    Python reports it (``x*`` on ``xxx`` finds ``xxx`` and then ``''`` at the
    end), Rust's regex crate, and so ripgrep, does not: without this the two
    engines counted different matches on one line.
    """
    end = -1
    for match in matches:
        start, stop = match.span()
        if start == stop == end:
            continue
        end = stop
        yield start, stop


def _endless(rel: str, number: int) -> str:
    return (
        f"[note: line {number} of {rel} is over {MAX_SCAN_LINE_BYTES:,} bytes: only"
        " its first part was searched, and the file not past it (use bash, e.g."
        " `rg`, for the rest)]"
    )


@dataclass(slots=True)
class _FileSearch:
    """One file's search: its lines in, output lines out (see `python_grep`)."""

    pattern: regex.Pattern[str]
    rel: str
    mode: str
    context: int
    separate: bool
    """True if a group printed before (in an earlier file) needs a ``--`` first."""

    def lines(self, reader: LineReader) -> Iterator[str]:
        if self.mode == "content":
            yield from self._content(reader)
            return
        hits = 0
        number = 0
        while (line := reader.next(keep=None)) is not None:
            number += 1
            if _spans(self.pattern, line.text, number, self.rel, all_of=False):
                hits += 1
                if self.mode == "files_with_matches":
                    break
            if line.length is None:  # unknown past here, unless a match answered
                if not (hits and self.mode == "files_with_matches"):
                    yield _endless(self.rel, number)
                break
        if hits:
            yield (
                self.rel if self.mode == "files_with_matches" else f"{self.rel}:{hits}"
            )

    def _content(self, reader: LineReader) -> Iterator[str]:
        rel, context = self.rel, self.context
        before: deque[tuple[int, str]] = deque(maxlen=context or 1)
        last = 0  # number of the last line printed (0: none yet)
        after = 0  # context lines still to print after a match
        number = 0
        while (line := reader.next(keep=None)) is not None:
            number += 1
            complete = line.length is not None
            spans = _spans(self.pattern, line.text, number, rel, all_of=True)
            if spans:
                first = before[0][0] if context and before else number
                if context and (self.separate or (last and first > last + 1)):
                    yield "--"
                self.separate = False
                if context:
                    yield from (f"{rel}-{n}-{text}" for n, text in before)
                    before.clear()
                shown = match_line(
                    line.text,
                    spans,
                    count=len(spans),
                    rel=rel,
                    number=number,
                    complete=complete,
                )
                yield f"{rel}:{number}:{shown}"
                last, after = number, context
            elif context:
                shown = context_line(
                    line.text, rel=rel, number=number, complete=complete
                )
                if after:
                    yield f"{rel}-{number}-{shown}"
                    last, after = number, after - 1
                else:
                    before.append((number, shown))
            if not complete:
                yield _endless(rel, number)
                return


def _open_text(path: Path) -> tuple[BinaryIO, LineSource] | None:
    """The file opened, and its lines as searched; None if binary, unreadable or not regular.

    Opened with `open_regular`: a FIFO or device swapped in after the walk saw
    a regular file is refused on the open descriptor, never blocked on. Which
    files are text, and how they are read, is `searched_as`.
    """
    try:
        stream = open_regular(path, path.name)
    except (OSError, ToolError):
        return None
    try:
        encoding = searched_as(stream.read(SNIFF_BYTES))
        if encoding is None:
            stream.close()
            return None
        stream.seek(len(codecs.BOM_UTF8) if encoding == "utf-8-sig" else 0)
    except OSError:
        stream.close()
        return None
    return stream, Utf16Lines(stream) if encoding == "utf-16" else stream


def python_grep(
    query: GrepQuery, workspace: Workspace, check: Callable[[], None]
) -> Iterator[str]:
    """Output lines of `query`, file by file in path order.

    Every line is searched whole (up to `MAX_SCAN_LINE_BYTES`, past which a
    note says what was not searched); content mode shows long lines as
    `match_line` and `context_line` do. Binary and unreadable files are
    skipped. `check` is called per directory and per file, and while long
    lines are read (a cancellation check). A bad regex raises `regex.error`;
    a line the pattern takes over `LINE_SECONDS` on raises `PatternTooSlow`.
    """
    pattern = regex.compile(query.regex, regex.IGNORECASE if query.ignore_case else 0)
    keep = compile_glob(query.glob) if query.glob else None
    printed = False
    for path in walk_files(workspace, query.start, check):
        check()
        rel = workspace.relative(path)
        below = path.name if path == query.start else path.relative_to(query.start)
        if keep is not None and not keep(Path(below).as_posix()):
            continue
        opened = _open_text(path)
        if opened is None:
            continue
        stream, source = opened
        search = _FileSearch(pattern, rel, query.mode, query.context, printed)
        with stream:
            for out in search.lines(LineReader(source, check)):
                printed = True
                yield out
