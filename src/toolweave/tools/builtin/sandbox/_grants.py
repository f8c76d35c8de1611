"""A path one confined command may write: the unit the kernel enforces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Grant"]


@dataclass(frozen=True, slots=True, order=True)
class Grant:
    """One path a confined command may write."""

    path: str
    """Absolute and resolved (no symlink in it)."""
    kind: Literal["file", "dir"]
    """``file``: write that existing file; ``dir``: create files and directories under it."""
