"""The pure-Python search behind `grep` when ripgrep is not installed.

Its output has ripgrep's format (``path:line:text``, context lines as
``path-line-text``, groups separated by ``--``), so the model sees the same
result either way. Differences: Python regular-expression syntax (the `regex`
package, a superset of `re`) instead of Rust's, and .gitignore files are not
honoured (VCS directories are still skipped).

Python's `re` holds the GIL for a whole match, and a pattern the model wrote
can backtrack for hours (``(a|aa)+$`` on a long line): the event loop, every
other call's timeout and the user's Ctrl-C would all wait for it. Here each
line is matched with the GIL released and under a time limit
(`LINE_SECONDS`); a line that exceeds it ends the search with an error that
tells the model why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import regex

from ..._exceptions import ToolError
from ._textfile import SNIFF_BYTES, is_binary, iter_lines, open_regular
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


def _groups(hits: list[int], context: int, n_lines: int) -> list[tuple[int, int]]:
    groups: list[tuple[int, int]] = []
    for hit in hits:
        lo, hi = max(0, hit - context), min(n_lines - 1, hit + context)
        if groups and lo <= groups[-1][1] + 1:
            groups[-1] = (groups[-1][0], max(groups[-1][1], hi))
        else:
            groups.append((lo, hi))
    return groups


def _content(
    rel: str, lines: list[str], hits: list[int], context: int, first: bool
) -> Iterator[str]:
    hit_set = set(hits)
    for index, (lo, hi) in enumerate(_groups(hits, context, len(lines))):
        if context and not (first and index == 0):
            yield "--"
        for i in range(lo, hi + 1):
            sep = ":" if i in hit_set else "-"
            yield f"{rel}{sep}{i + 1}{sep}{lines[i]}"


def _text_lines(path: Path) -> list[str] | None:
    """The file's lines, or None if it is binary, unreadable or not a regular file.

    Opened with `open_regular`: a FIFO or device swapped in after the walk saw
    a regular file is refused on the open descriptor, never blocked on.
    """
    try:
        with open_regular(path, path.name) as stream:
            if is_binary(stream.read(SNIFF_BYTES)):
                return None
            stream.seek(0)
            return list(iter_lines(stream))
    except (OSError, ToolError):
        return None


def python_grep(
    query: GrepQuery, workspace: Workspace, check: Callable[[], None]
) -> Iterator[str]:
    """Output lines of `query`, file by file in path order.

    Binary and unreadable files are skipped. `check` is called per directory
    and per file (a cancellation check). A bad regex raises `regex.error`; a
    line the pattern takes over `LINE_SECONDS` on raises `PatternTooSlow`.
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
        lines = _text_lines(path)
        if lines is None:
            continue
        hits = _hits(pattern, lines, rel)
        if not hits:
            continue
        if query.mode == "files_with_matches":
            yield rel
        elif query.mode == "count":
            yield f"{rel}:{len(hits)}"
        else:
            yield from _content(rel, lines, hits, query.context, not printed)
        printed = True


def _hits(pattern: regex.Pattern[str], lines: list[str], rel: str) -> list[int]:
    """Indices of the lines `pattern` matches; each match runs without the GIL."""
    hits: list[int] = []
    search = pattern.search
    for index, line in enumerate(lines):
        try:
            found = search(line, concurrent=True, timeout=LINE_SECONDS)
        except TimeoutError:
            raise PatternTooSlow(
                f"the pattern took over {LINE_SECONDS:g} s to match line {index + 1}"
                f" of {rel} and the search was stopped (catastrophic backtracking:"
                " avoid nested or overlapping repetition such as (a+)+ or (a|aa)+)"
            ) from None
        if found:
            hits.append(index)
    return hits
