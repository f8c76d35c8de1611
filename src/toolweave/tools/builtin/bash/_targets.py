"""Where a literal path operand lands, as the grant the kernel can enforce for it.

Shared by the writers (`_writers`): each resolves its operands against the
workspace root (the command's working directory) and resolves symlinks, so a
grant names the real path the kernel will check. None means "not at a
granularity we can grant": the command then stays a barrier.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..sandbox import Grant

__all__ = ["create_grant", "operand", "real", "tree_grant", "write_grant"]


def operand(word: str, root: Path) -> Path:
    """The path `word` names from the workspace root (not resolved)."""
    return Path(word) if word.startswith("/") else root / word


def real(path: Path) -> Path:
    """`path` with every symlink resolved."""
    return Path(os.path.realpath(path))


def write_grant(target: Path) -> Grant | None:
    """Open-for-writing `target` (``touch``, ``> f``, ``tee f``, ``cp x f``).

    An existing regular file with one name: that file; a new name: creations
    in its (real) parent. A directory, a dangling link, a device: None.
    """
    resolved = real(target)
    if resolved.is_file():
        return None if resolved.stat().st_nlink > 1 else Grant(str(resolved), "file")
    if os.path.lexists(target) or os.path.lexists(resolved):
        return None
    return create_grant(resolved.parent)


def create_grant(directory: Path) -> Grant | None:
    """Creations beneath the nearest existing ancestor of `directory` (``mkdir -p``)."""
    at = real(directory)
    while not at.exists():
        if os.path.lexists(at) or at.parent == at:
            return None  # a dangling link on the way
        at = at.parent
    return Grant(str(at), "dir") if at.is_dir() else None


def tree_grant(target: Path) -> Grant | None:
    """Every change in the directory holding the *name* `target` (``rm``, ``mv``).

    The name itself is removed or renamed, not what a link at it points to, so
    the grant is the real path of its parent directory.
    """
    parent = real(target.parent)
    return Grant(str(parent), "tree") if parent.is_dir() else None
