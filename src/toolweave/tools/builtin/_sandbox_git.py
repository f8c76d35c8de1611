"""Keep ``.git/config`` and ``.git/hooks`` as they were around a workspace-write call.

Landlock only grants rights (a rule on the workspace covers everything under
it), so it cannot keep two paths *inside* a writable workspace read-only.
bubblewrap can (a read-only bind mount over each), and is preferred for
workspace-write when it works. When the workspace-write call runs under
Landlock, this guard stands in: it snapshots the repository's configuration
and hooks before the call and, after it, puts back anything the call changed
and says so. That is detection and repair, not prevention: the command itself
could use a configuration it wrote during its own run (it could run any
program anyway); what is stopped is the change outliving the call, where it
would turn a later read-only ``git`` call into a program launcher.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitGuard", "protected_git_paths"]


def protected_git_paths(root: Path) -> list[Path]:
    """``.git/config`` and ``.git/hooks`` of the repository at `root`, if it has them."""
    git = root / ".git"
    if git.is_symlink() or not git.is_dir():
        return []  # no repository, or a worktree whose git dir lies outside
    return [p for p in (git / "config", git / "hooks") if os.path.lexists(p)]


@dataclass(frozen=True, slots=True)
class _Entry:
    kind: str  # "file" | "link" | "dir"
    data: bytes = b""
    mode: int = 0o644


def _entry(path: Path) -> _Entry | None:
    if path.is_symlink():
        return _Entry("link", os.readlink(path).encode())
    if path.is_dir():
        return _Entry("dir", mode=path.stat().st_mode & 0o7777)
    if path.is_file():
        return _Entry("file", path.read_bytes(), path.stat().st_mode & 0o7777)
    return None


def _tree(top: Path) -> dict[Path, _Entry]:
    """Every entry at and under `top`, without following links."""
    found: dict[Path, _Entry] = {}
    entry = _entry(top)
    if entry is None:
        return found
    found[top] = entry
    if entry.kind == "dir":
        for child in sorted(top.iterdir()):
            found.update(_tree(child))
    return found


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _put(path: Path, entry: _Entry) -> None:
    if entry.kind == "link":
        os.symlink(entry.data.decode(), path)
        return
    if entry.kind == "dir":
        path.mkdir(exist_ok=True)
    else:
        path.write_bytes(entry.data)
    os.chmod(path, entry.mode)


class GitGuard:
    """A snapshot of the protected paths, able to undo changes to them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        """The workspace root."""
        self._before: dict[Path, _Entry] = {}
        for top in protected_git_paths(root):
            self._before.update(_tree(top))
        self._tops = protected_git_paths(root)

    def restore(self) -> list[str]:
        """Undo every change under the protected paths; the paths that changed."""
        changed: list[str] = []
        after: dict[Path, _Entry] = {}
        for top in self._tops:
            after.update(_tree(top))
        for path in sorted(set(after) - set(self._before), reverse=True):
            if os.path.lexists(path):
                _remove(path)
            changed.append(str(path.relative_to(self.root)))
        for path, entry in sorted(self._before.items()):
            if after.get(path) != entry:
                if os.path.lexists(path) and (entry.kind != "dir" or path.is_symlink()):
                    _remove(path)
                _put(path, entry)
                changed.append(str(path.relative_to(self.root)))
        return sorted(set(changed))
