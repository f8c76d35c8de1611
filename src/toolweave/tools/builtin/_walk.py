"""Walking the workspace for glob and the pure-Python grep, and glob patterns."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import regex

from ..._exceptions import ToolError, ToolInputError
from ._workspace import Workspace

__all__ = ["GLOB_MATCH_SECONDS", "SKIPPED_DIRS", "compile_glob", "walk_files"]

GLOB_MATCH_SECONDS = 0.5
"""Longest one path may take to match a glob pattern before the call gives up."""

SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
"""Version-control directories never walked (ripgrep is told the same)."""


def _translate_segment(pattern: str, i: int) -> tuple[str, int]:
    char = pattern[i]
    if char == "*":
        return "[^/]*", i + 1
    if char == "?":
        return "[^/]", i + 1
    if char == "[":
        end = pattern.find("]", i + 2)
        if end != -1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            return f"[{body}]", end + 1
    if char == "{":
        end = pattern.find("}", i)
        if end != -1:
            options = pattern[i + 1 : end].split(",")
            return "(?:" + "|".join(_translate(o) for o in options) + ")", end + 1
    return re.escape(char), i + 1


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            piece, i = _translate_segment(pattern, i)
            out.append(piece)
    return "".join(out)


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A matcher of POSIX relative paths for a glob pattern.

    ``*`` and ``?`` stay within one path segment, ``**`` crosses segments,
    ``[abc]``/``[!abc]`` are classes and ``{a,b}`` alternatives. Like ripgrep's
    ``--glob`` (and .gitignore), a pattern without ``/`` matches the file name at
    any depth: ``*.py`` finds ``src/pkg/a.py``.

    Matching runs with the GIL released and at most `GLOB_MATCH_SECONDS` per
    path: a model's pattern like ``{a,aa}{a,aa}…`` backtracks exponentially,
    and must end its own call with an error, not freeze the event loop. The
    matcher raises `ToolError` then.

    Raises:
        ToolInputError: the pattern is absolute or climbs with ``..``.
    """
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolInputError(
            f"glob pattern {pattern!r} must be relative and stay inside the searched "
            "directory (no leading '/' and no '..'); use the path argument instead"
        )
    compiled = regex.compile(_translate(pattern.removeprefix("./")) + r"\Z")
    whole = "/" in pattern

    def matches(rel: str) -> bool:
        subject = rel if whole else rel.rsplit("/", 1)[-1]
        try:
            return (
                compiled.match(subject, concurrent=True, timeout=GLOB_MATCH_SECONDS)
                is not None
            )
        except TimeoutError:
            raise ToolError(
                f"glob pattern {pattern!r} took over {GLOB_MATCH_SECONDS:g} s to match"
                f" the path {rel!r} and was stopped: it has too many {{a,b}}"
                " alternatives or wildcards in a row; simplify it"
            ) from None

    return matches


def walk_files(
    workspace: Workspace,
    start: Path,
    on_dir: Callable[[], None] | None = None,
    on_error: Callable[[Path, OSError], None] | None = None,
) -> Iterator[Path]:
    """Every regular file under `start`, in path order, never leaving the workspace.

    Directory links are not followed; file links are listed only when they
    resolve inside the workspace. VCS directories (`SKIPPED_DIRS`) are skipped.
    `on_dir` is called before each directory is listed (a cancellation check);
    `on_error` gets each directory that could not be listed (unreadable, or a
    path too long for the OS), which is otherwise skipped silently.

    The walk is iterative (a 5,000-level directory chain is no recursion
    limit) and lazy: each directory's entries are sorted as it is reached, so
    files come out in path order while memory holds only the directories on
    the current path, never the whole tree's file list.
    """
    if start.is_file():
        yield start
        return
    stack: list[tuple[Path, bool]] = [(start, True)]
    while stack:
        path, is_dir = stack.pop()
        if not is_dir:
            yield path
            continue
        if on_dir is not None:
            on_dir()
        try:
            children = _children(workspace, path)
        except OSError as exc:
            if on_error is not None:
                on_error(path, exc)
            continue
        stack.extend(reversed(children))


def _children(workspace: Workspace, directory: Path) -> list[tuple[Path, bool]]:
    """The walkable entries of `directory`, sorted by name: (path, is a directory).

    Raises:
        OSError: the directory cannot be listed.
    """
    found: list[tuple[str, Path, bool]] = []
    with os.scandir(directory) as entries:
        for entry in entries:
            path = Path(entry.path)
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        found.append((entry.name, path, True))
                elif entry.is_symlink():
                    if workspace.contains(path) and path.is_file():
                        found.append((entry.name, path, False))
                elif entry.is_file(follow_symlinks=False):
                    found.append((entry.name, path, False))
            except OSError:  # the entry vanished or cannot be inspected: skip it
                continue
    found.sort(key=lambda item: item[0])
    return [(path, is_dir) for _, path, is_dir in found]
