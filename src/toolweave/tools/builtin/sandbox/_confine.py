"""The kernel's rules for one confined call: write grants and, optionally, reads.

Two backends, one meaning:

- **Landlock** is an allow-list of (path, rights) rules, each covering the
  path and everything beneath it. Writes: one rule per `Grant` with the rights
  its kind needs. Reads confined to a declared set inside the workspace: the
  rule ``/`` = read is replaced by a read rule for every entry of every
  ancestor of the workspace *except the next one on the way to it*, plus one
  per declared read path. So everything outside the workspace stays readable
  (the ancestors themselves cannot be listed: a rule on a directory covers
  what is beneath it), and inside it only the declared paths. Path lookup
  needs no right, so ``cat src/a.py`` works with a rule on that file alone.
- **bubblewrap** binds ``/`` read-only; with reads confined, an empty tmpfs
  covers the workspace, the declared read paths are bound back read-only and
  the grants read-write (parents before children), and the tmpfs is then made
  read-only, so a write to any other path fails (EROFS) instead of landing in
  a tmpfs that vanishes.

`read_rules` gives up (None: reads stay unconfined) when the ancestors hold
more than `MAX_ANCESTOR_ENTRIES` entries: the spawn would cost too much.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ._grants import Grant
from ._landlock import (
    EXECUTE,
    FS_READ,
    READ_FILE,
    fs_all,
    fs_create_beneath,
    fs_file_write,
    fs_tree,
)

__all__ = ["MAX_ANCESTOR_ENTRIES", "bwrap_binds", "grant_rules", "read_rules"]

MAX_ANCESTOR_ENTRIES = 2_000
"""Entries next to the workspace's ancestors beyond which reads are not confined."""


def _read_right(path: str) -> int:
    return FS_READ if os.path.isdir(path) else EXECUTE | READ_FILE


def grant_rules(grants: Sequence[Grant], abi: int) -> list[tuple[str, int]]:
    """One Landlock rule per grant, with the rights its kind needs."""
    rights = {
        "file": fs_file_write(abi),
        "dir": fs_create_beneath(abi),
        "tree": fs_tree(abi),
        "git": fs_all(abi),
    }
    return [(g.path, rights[g.kind]) for g in grants]


def read_rules(root: Path, reads: Sequence[str]) -> list[tuple[str, int]] | None:
    """Read rules for everything but the workspace, plus `reads` inside it.

    None when the workspace's ancestors are too crowded (`MAX_ANCESTOR_ENTRIES`)
    or cannot be listed: the caller then keeps ``/`` readable.
    """
    rules: list[tuple[str, int]] = []
    at = Path("/")
    for part in root.parts[1:]:
        try:
            with os.scandir(at) as entries:  # the entry type without a stat
                for entry in entries:
                    if entry.name != part:
                        rules.append((entry.path, _entry_right(entry)))
        except OSError:
            return None
        if len(rules) > MAX_ANCESTOR_ENTRIES:
            return None
        at = at / part
    rules += [(path, _read_right(path)) for path in reads]
    return rules


def _entry_right(entry: os.DirEntry[str]) -> int:
    """`_read_right` of a listed entry (a link is followed, as `os.path.isdir` does)."""
    try:
        return FS_READ if entry.is_dir() else EXECUTE | READ_FILE
    except OSError:
        return EXECUTE | READ_FILE


def bwrap_binds(root: Path, reads: Sequence[str], grants: Sequence[Grant]) -> list[str]:
    """The bwrap arguments that leave only `reads` readable and `grants` writable in `root`.

    A read path inside a directory grant (or equal to a file grant) is left to
    the grant: binding it read-only on top would take the grant's write away.
    """
    wide = [Path(g.path) for g in grants if g.kind != "file"]
    exact = {g.path for g in grants if g.kind == "file"}
    binds: list[tuple[int, int, str, str]] = []
    for path in reads:
        if path in exact or any(Path(path).is_relative_to(w) for w in wide):
            continue
        binds.append((len(Path(path).parts), 0, "--ro-bind-try", path))
    for grant in grants:
        binds.append((len(Path(grant.path).parts), 1, "--bind", grant.path))
    argv = ["--tmpfs", str(root)]
    for _, _, how, path in sorted(binds):
        argv += [how, path, path]
    return [*argv, "--remount-ro", str(root)]
