"""A path one confined command may write: the unit the kernel enforces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Grant", "GrantKind"]

GrantKind = Literal["file", "dir", "tree", "git"]
"""What a grant allows at its path (see `Grant.kind`)."""


@dataclass(frozen=True, slots=True, order=True)
class Grant:
    """One path a confined command may write."""

    path: str
    """Absolute and resolved (no symlink in it)."""
    kind: GrantKind
    """``file``: write that existing file; ``dir``: create files and directories
    under it (no removal, rename or link); ``tree``: every change under it
    (create, write, remove, rename, symlink: what ``rm``, ``mv``, ``sed -i`` and
    ``ln -s`` need); ``git``: the repository's ``.git`` directory, every change
    under it but the git files that choose programs, which the sandbox keeps
    (bwrap binds them read-only) or puts back after the call (`GitGuard`)."""
