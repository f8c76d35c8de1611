"""Keep a repository's program-selecting files as they were around a workspace-write call.

What must not outlive a workspace-write call is any change that makes a later
``git`` run a program the agent chose — above all the user's own ``git status``
outside every sandbox. That is more than ``.git/config`` and ``.git/hooks``:

- ``.git`` itself: renamed away and replaced (``mv .git x; mkdir .git``), or
  turned into a gitfile (``gitdir: evil``), it brings a whole new config;
- files git reads when they *appear*: ``commondir`` (config and hooks then
  come from another directory), ``config.worktree``, a ``hooks`` directory
  where there was none, ``info/attributes`` (selects filter drivers);
- the same files of submodule and worktree git dirs (``.git/modules/*``,
  ``.git/worktrees/*``): ``git status`` recurses into submodules.

bubblewrap prevents what a mount can: ``.git`` is bound onto itself (a mount
point cannot be renamed or removed) and the existing files are bound read-only.
Files that do not exist yet cannot be covered by a mount, and Landlock cannot
carve read-only holes at all, so this guard runs after every workspace-write
call under either backend: it snapshots the protected paths before, and after
the call puts back what changed, removes what appeared, and moves a replaced
``.git`` aside (bringing the original back when it is still in the workspace).
That part is detection and repair, not prevention: during its own run the
command could use what it wrote (it could run any program anyway); what is
stopped is the change outliving the call.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GitGuard", "protected_git_paths"]

logger = logging.getLogger("toolweave.sandbox")

_CONTROL = ("config", "config.worktree", "hooks", "commondir", "info/attributes")
"""Paths in a git dir that select programs git runs (present or, if absent, not created)."""


def _git_dirs(root: Path) -> list[Path]:
    """The repository's git dir at `root` and its submodule and worktree git dirs."""
    git = root / ".git"
    if git.is_symlink() or not git.is_dir():
        return []  # no repository, or a worktree whose git dir lies outside
    found = [git]
    for sub in ("modules", "worktrees"):
        stack = [git / sub]
        while stack:  # submodules nest: modules/a/modules/b
            top = stack.pop()
            if top.is_symlink() or not top.is_dir():
                continue
            for child in sorted(top.iterdir()):
                if child.is_dir() and not child.is_symlink():
                    found.append(child)
                    stack.append(child / "modules")
    return found


def _candidates(root: Path) -> list[Path]:
    git = root / ".git"
    if git.is_file() and not git.is_symlink():  # a worktree's gitfile: its target
        return [git]
    return [d / name for d in _git_dirs(root) for name in _CONTROL]


def protected_git_paths(root: Path) -> list[Path]:
    """The program-selecting paths of the repository at `root` that exist now.

    In a linked worktree ``.git`` is a file (``gitdir: …``) naming the git dir:
    rewritten, it would point git at a config of the agent's choosing.
    """
    return [p for p in _candidates(root) if os.path.lexists(p)]


@dataclass(frozen=True, slots=True)
class _Entry:
    kind: str  # "file" | "link" | "dir" | "unread" (a file not read: see _entry)
    data: bytes = b""
    mode: int = 0o644


def _entry(
    path: Path, known: _Entry | None = None, *, read: bool = True
) -> _Entry | None:
    """What is at `path` now (no link followed); None if nothing.

    With ``read=False`` a file's content is read only when it could equal
    `known` (same size), so a huge file the command wrote is never loaded:
    a file not read is an ``unread`` entry, equal to nothing.
    """
    if path.is_symlink():
        return _Entry("link", os.readlink(path).encode())
    if path.is_dir():
        return _Entry("dir", mode=path.stat().st_mode & 0o7777)
    if path.is_file():
        st = path.stat()
        mode = st.st_mode & 0o7777
        if read or (known and known.kind == "file" and len(known.data) == st.st_size):
            return _Entry("file", path.read_bytes(), mode)
        return _Entry("unread", mode=mode)
    return None


def _tree(top: Path, before: dict[Path, _Entry] | None = None) -> dict[Path, _Entry]:
    """Every entry at and under `top`, without following links (an explicit stack).

    With `before` (the snapshot), the walk only enters directories that were
    there before and reads only files that could be unchanged: what the
    command created is recorded at its top and removed whole, so neither its
    depth nor its size matters (a 1,500-deep ``hooks/a/a/…`` or a 2 GB file).
    """
    found: dict[Path, _Entry] = {}
    stack = [top]
    while stack:
        path = stack.pop()
        known = None if before is None else before.get(path)
        entry = _entry(path, known, read=before is None)
        if entry is None:
            continue
        found[path] = entry
        was_dir = before is None or (known is not None and known.kind == "dir")
        if entry.kind == "dir" and was_dir:
            stack.extend(sorted(path.iterdir(), reverse=True))
    return found


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _discard(path: Path, root: Path) -> None:
    """Remove `path`; if it cannot be (too deep for rmtree), move it out of git's way."""
    try:
        _remove(path)
    except (OSError, RecursionError):
        path.rename(root / f".git-discarded-{uuid.uuid4().hex[:8]}")


def _real_parents(path: Path, root: Path) -> None:
    """Make every directory between `root` and `path` a real one (no symlink).

    So a restore cannot be redirected outside the repository.
    """
    current = root
    for part in path.relative_to(root).parts[:-1]:
        current = current / part
        if current.is_symlink() or (os.path.lexists(current) and not current.is_dir()):
            current.unlink()
        current.mkdir(exist_ok=True)


def _put(path: Path, entry: _Entry) -> None:
    if entry.kind == "link":
        os.symlink(entry.data.decode(), path)
        return
    if entry.kind == "dir":
        path.mkdir(exist_ok=True)
    else:
        path.write_bytes(entry.data)
    os.chmod(path, entry.mode)


def _identity(path: Path) -> tuple[str, int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    kind = "link" if path.is_symlink() else "dir" if path.is_dir() else "file"
    return kind, st.st_dev, st.st_ino


class GitGuard:
    """A snapshot of the protected paths, able to undo changes to them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        """The workspace root."""
        self._git = _identity(root / ".git")
        self._before: dict[Path, _Entry] = {}
        self._tops = _candidates(root)
        for top in self._tops:
            self._before.update(_tree(top))

    def restore(self) -> list[str]:
        """Undo every change to the protected paths; the paths that changed.

        Never raises: a path that cannot be put back is logged and reported.
        """
        changed: list[str] = []
        try:
            if self._git is not None and self._git[0] == "dir":
                changed += self._restore_git_dir()
            changed += self._restore_paths()
        except OSError as exc:  # report, never break the call's result
            logger.warning("could not restore the repository's git files: %s", exc)
            changed.append(f".git (not fully restored: {exc.strerror or exc})")
        return sorted(set(changed))

    def _restore_git_dir(self) -> list[str]:
        """``.git`` replaced or moved: set the new one aside, bring the old one back."""
        git = self.root / ".git"
        assert self._git is not None
        if _identity(git) == self._git:
            return []
        if os.path.lexists(git):
            aside = self.root / f".git.replaced-{uuid.uuid4().hex[:8]}"
            git.rename(aside)
        for child in self.root.iterdir():  # the usual `mv .git elsewhere`
            if _identity(child) == self._git:
                child.rename(git)
                break
        return [".git"]

    def _restore_paths(self) -> list[str]:
        changed: list[str] = []
        after: dict[Path, _Entry] = {}
        tops = dict.fromkeys([*self._tops, *_candidates(self.root)])
        for top in tops:
            after.update(_tree(top, self._before))
        for path in sorted(set(after) - set(self._before), reverse=True):
            if os.path.lexists(path):
                _discard(path, self.root)
            changed.append(str(path.relative_to(self.root)))
        git = self.root / ".git"
        gone = git.is_symlink() or not git.is_dir()  # deleted: make no skeleton
        for path, entry in sorted(self._before.items()):
            if after.get(path) != entry and not (gone and path != git):
                _real_parents(path, self.root)
                if os.path.lexists(path) and (entry.kind != "dir" or path.is_symlink()):
                    _remove(path)
                _put(path, entry)
                changed.append(str(path.relative_to(self.root)))
        return changed
