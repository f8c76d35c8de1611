"""The workspace root every built-in file tool is confined to."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from ..._exceptions import ToolError, ToolInputError, WorkspaceEscapeError

__all__ = ["MAX_NAME_BYTES", "MAX_PATH_BYTES", "Workspace"]

MAX_PATH_BYTES = 4096
"""Longest path (encoded, resolved) the tools accept: Linux's PATH_MAX."""

MAX_NAME_BYTES = 255
"""Longest single path component: NAME_MAX on Linux and macOS."""

_SHOWN_CHARS = 200
"""How much of a refused path an error message repeats."""


def _shown(path: str) -> str:
    """`path` for an error message: quoted, and cut if long (it may be 100 KB)."""
    if len(path) <= _SHOWN_CHARS:
        return repr(path)
    return f"{path[:_SHOWN_CHARS]!r}… ({len(path):,} characters)"


def _expand(path: str) -> Path:
    """`path` with ``~`` expanded; an unknown ``~user`` is an input error."""
    try:
        return Path(path).expanduser()
    except RuntimeError as exc:  # no home directory for that user
        raise ToolInputError(
            f"cannot expand '~' in path {_shown(path)}: {exc}"
        ) from None


def _check_name(path: str) -> None:
    """Refuse what no filesystem call could take, before any is made.

    Over-long paths and names would otherwise surface as raw ``ENAMETOOLONG``
    errors (repeating the whole path) from whichever call meets them first, and
    a lone surrogate that has no byte form as a ``UnicodeEncodeError``.
    """
    if not path.strip() or "\x00" in path:
        raise ToolInputError(f"invalid path {_shown(path)}")
    try:
        encoded = os.fsencode(path)
    except UnicodeEncodeError:
        raise ToolInputError(
            f"path {_shown(path)} holds characters no file name can contain"
        ) from None
    if len(encoded) >= MAX_PATH_BYTES:
        raise ToolInputError(
            f"path {_shown(path)} is too long ({len(encoded):,} bytes; the limit "
            f"is {MAX_PATH_BYTES - 1:,})"
        )
    if any(len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")):
        raise ToolInputError(
            f"path {_shown(path)} has a name over {MAX_NAME_BYTES} bytes long"
        )


class Workspace:
    """A directory that file tools may reach, and nothing outside it.

    `resolve` is the one gate: a path is made absolute against the root, every
    symlink in it is followed (dangling ones too), and the result must lie under
    the resolved root. So ``..``, an absolute path elsewhere, and a link that
    leads out are all refused with `WorkspaceEscapeError` before any file is
    opened. The resolved path is also what access keys name, so two spellings of
    one file (a link and its target) claim the same key.

    The check and the later open are two system calls: a link swapped in between
    them by another process is not caught. Within one session that cannot happen
    concurrently, because every tool that can create links is SEQUENTIAL.

    Thread affinity: none; the methods only read the filesystem.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """Confine tools to `root`, which must be an existing directory.

        Raises:
            NotADirectoryError: `root` is not a directory.
        """
        resolved = Path(root).resolve(strict=True)
        if not resolved.is_dir():
            raise NotADirectoryError(f"workspace root {resolved} is not a directory")
        self.root = resolved
        """The resolved root directory."""

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def resolve(self, path: str) -> Path:
        """The absolute, link-free path `path` names, checked to be inside the root.

        Relative paths are taken from the root; ``~`` is expanded (and is then
        usually outside).

        Raises:
            ToolInputError: the path is empty, holds a NUL byte, is too long
                (given or resolved), names an unknown ``~user``, or loops.
            WorkspaceEscapeError: the path resolves outside the root.
        """
        _check_name(path)
        given = _expand(path)
        full = given if given.is_absolute() else self.root / given
        try:
            resolved = full.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise ToolInputError(f"cannot resolve path {_shown(path)}: {exc}") from exc
        if not resolved.is_relative_to(self.root):
            raise WorkspaceEscapeError(
                f"path {_shown(path)} resolves to {_shown(str(resolved))}, outside "
                f"the workspace {self.root}; file tools only reach files under the "
                "workspace"
            )
        if len(os.fsencode(resolved)) >= MAX_PATH_BYTES:  # links can lengthen it
            raise ToolInputError(
                f"path {_shown(path)} resolves to a path over {MAX_PATH_BYTES - 1:,}"
                " bytes long"
            )
        return resolved

    def contains(self, path: Path) -> bool:
        """True if `path`, with its links followed, lies inside the root."""
        try:
            return path.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):
            return False

    def relative(self, path: Path) -> str:
        """`path` relative to the root, in POSIX form (``.`` for the root itself)."""
        rel = path.relative_to(self.root).as_posix()
        return rel or "."

    def subject(self, path: str) -> PurePath:
        """The absolute path permission rules see for `path`; never raises.

        The resolved path when `resolve` accepts it; otherwise the path made
        absolute without following links (the tool itself then refuses it).
        """
        try:
            return self.resolve(path)
        except ToolError:
            try:
                given = _expand(path)
            except ToolError:
                given = Path(path)
            return PurePath(os.path.normpath(self.root / given))

    @staticmethod
    def key(path: Path) -> str:
        """The access key of a resolved path: ``fs:<absolute path>``."""
        return f"fs:{path}"
