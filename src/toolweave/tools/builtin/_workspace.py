"""The workspace root every built-in file tool is confined to."""

from __future__ import annotations

import os
from pathlib import Path, PurePath

from ..._exceptions import ToolError, ToolInputError, WorkspaceEscapeError

__all__ = ["Workspace"]


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
            ToolInputError: the path is empty, holds a NUL byte, or loops.
            WorkspaceEscapeError: the path resolves outside the root.
        """
        if not path.strip() or "\x00" in path:
            raise ToolInputError(f"invalid path {path!r}")
        given = Path(path).expanduser()
        full = given if given.is_absolute() else self.root / given
        try:
            resolved = full.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise ToolInputError(f"cannot resolve path {path!r}: {exc}") from exc
        if not resolved.is_relative_to(self.root):
            raise WorkspaceEscapeError(
                f"path {path!r} resolves to {resolved}, outside the workspace "
                f"{self.root}; file tools only reach files under the workspace"
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
            return PurePath(os.path.normpath(self.root / Path(path).expanduser()))

    @staticmethod
    def key(path: Path) -> str:
        """The access key of a resolved path: ``fs:<absolute path>``."""
        return f"fs:{path}"
