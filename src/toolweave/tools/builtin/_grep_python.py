"""The pure-Python search behind `grep` when ripgrep is not installed.

Its output has ripgrep's format (``path:line:text``, context lines as
``path-line-text``, groups separated by ``--``), so the model sees the same
result either way. Differences: Python `re` syntax instead of Rust regex, and
.gitignore files are not honoured (VCS directories are still skipped).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ._textfile import SNIFF_BYTES, is_binary, iter_lines
from ._walk import compile_glob, walk_files
from ._workspace import Workspace

__all__ = ["GrepQuery", "python_grep"]


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
    try:
        with path.open("rb") as stream:
            if is_binary(stream.read(SNIFF_BYTES)):
                return None
            stream.seek(0)
            return list(iter_lines(stream))
    except OSError:
        return None


def python_grep(
    query: GrepQuery, workspace: Workspace, check: Callable[[], None]
) -> Iterator[str]:
    """Output lines of `query`, file by file in path order.

    Binary and unreadable files are skipped. `check` is called per directory
    and per file (a cancellation check). A bad regex raises `re.error`.
    """
    pattern = re.compile(query.regex, re.IGNORECASE if query.ignore_case else 0)
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
        hits = [i for i, line in enumerate(lines) if pattern.search(line)]
        if not hits:
            continue
        if query.mode == "files_with_matches":
            yield rel
        elif query.mode == "count":
            yield f"{rel}:{len(hits)}"
        else:
            yield from _content(rel, lines, hits, query.context, not printed)
        printed = True
