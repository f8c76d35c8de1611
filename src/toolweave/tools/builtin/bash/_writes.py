"""What a bash command reads and writes, when its parse says so: access the sandbox enforces.

Issue 28 item 1. A command made of read-only parts, the writers of `_writers`
(``mkdir``, ``touch``, ``tee``, ``cp``, ``mv``, ``rm``, ``ln -s``,
``sed -i``, ``git add``/``git commit``) and output redirections to literal
files declares the grants those need (`Declared.grants`), and, where every
part's reads are known (`_reads`), the workspace paths it reads
(`Declared.reads`). The bash tool then runs it read-only everywhere except
those grants, reading inside the workspace only those paths (Landlock rules
or bwrap binds, `Sandbox.confine`), so the declared keys are what the command
*could* touch, not what it is hoped to.

Not declared (None: the command stays what it was, a barrier or a read of
the whole workspace): any expansion or glob in an operand; a target outside
the workspace, the workspace root itself, or a grant that holds or lies in
``.git`` (but the ``git`` grant of ``git add``/``commit``), git's
program-choosing paths or a nested repository; a ``cd``/``pushd`` anywhere
(operands would resolve elsewhere); a granted directory holding a hard-linked
file (a write through it would change a file elsewhere) or more entries than
`MAX_SCAN`. Symlinks are resolved: a grant names the real target (the kernel
checks the real path too).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..sandbox import Grant, protected_git_paths
from ._commands import argv_read_only
from ._parse import Script, Unparsed, parse_script
from ._reads import part_reads, paths_read
from ._targets import operand, write_grant
from ._writers import writer_grants

__all__ = ["MAX_SCAN", "Declared", "covers", "declared_access", "declared_writes"]

MAX_SCAN = 2_000
"""Entries of a granted directory checked for hard links at most."""

_MOVES_CWD = frozenset({"cd", "pushd", "popd"})
_REDIRECT = "output redirected to a file"
_RANK = {"file": 0, "dir": 1, "tree": 2, "git": 3}


@dataclass(frozen=True, slots=True)
class Declared:
    """The access a command's parse declares, for the sandbox to enforce."""

    grants: tuple[Grant, ...]
    """What it may write (sorted; empty: nothing)."""
    reads: tuple[str, ...] | None
    """The workspace paths it may read; None: the whole workspace."""


def declared_access(command: str, root: Path) -> Declared | None:
    """The access `command` declares, or None when nothing about it is known.

    `root` is the resolved workspace root and the command's working directory.
    Never raises. Writers with unknown targets make the whole answer None;
    reads alone may be None (the whole workspace) with the writes still known.
    """
    script = parse_script(command)
    if isinstance(script, Unparsed) or script.opaque:
        return None
    if any(h != _REDIRECT for h in script.hazards):
        return None
    grants = _grants(script, root)
    if grants is None:
        return None
    protected = [Path(os.path.realpath(p)) for p in protected_git_paths(root)]
    if not all(_allowed(grant, root, protected) for grant in grants):
        return None
    return Declared(tuple(sorted(set(grants))), _reads(script, root))


def declared_writes(command: str, root: Path) -> tuple[Grant, ...] | None:
    """The grants `command` writes through, or None when not statically known."""
    declared = declared_access(command, root)
    return declared.grants or None if declared is not None else None


def _grants(script: Script, root: Path) -> list[Grant] | None:
    grants: list[Grant] = []
    for part in script.commands:
        if part.name in _MOVES_CWD:
            return None
        found = writer_grants(part, root)
        if found is not None:
            grants += found
        elif not argv_read_only(part.words):
            return None
    for target in script.outputs:
        grant = None if target is None else write_grant(operand(target, root))
        if grant is None:
            return None
        grants.append(grant)
    return grants


def _reads(script: Script, root: Path) -> tuple[str, ...] | None:
    found: list[str] = []
    for part in script.commands:
        reads = part_reads(part, root)
        if reads is None:
            return None
        found += reads
    if None in script.inputs:
        return None
    inputs = paths_read([t for t in script.inputs if t is not None], root)
    if inputs is None:
        return None
    return tuple(sorted(set(found + inputs)))


def covers(declared: Declared, now: Declared | None) -> bool:
    """True if `now` (the access at the call's start) lies within `declared`.

    The gate scheduled the call by `declared`; a target that resolves
    differently at the start (a link swapped, a directory created meanwhile)
    may only narrow it.
    """
    if now is None:
        return False
    if any(not any(_within(g, d) for d in declared.grants) for g in now.grants):
        return False
    if declared.reads is None:
        return True
    if now.reads is None:
        return False
    wide = [*declared.reads, *(g.path for g in declared.grants if g.kind != "file")]
    return all(any(Path(r).is_relative_to(w) for w in wide) for r in now.reads)


def _within(inner: Grant, outer: Grant) -> bool:
    if _RANK[inner.kind] > _RANK[outer.kind]:
        return False
    if inner.path == outer.path:
        return True
    return outer.kind != "file" and Path(inner.path).is_relative_to(outer.path)


def _allowed(grant: Grant, root: Path, protected: list[Path]) -> bool:
    path = Path(grant.path)
    if grant.kind == "git":  # git add / commit: .git itself, its program files kept
        return path == Path(os.path.realpath(root / ".git"))
    if path == root or not path.is_relative_to(root):
        return False
    for git in protected:
        if git.is_relative_to(path) or path.is_relative_to(git):
            return False
    if any(part == ".git" for part in path.relative_to(root).parts):
        return False
    return grant.kind == "file" or _no_hard_links(path)


def _no_hard_links(top: Path) -> bool:
    """No regular file under `top` has another name (bounded by `MAX_SCAN`)."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(top):
        if ".git" in dirnames or ".git" in filenames:
            return False  # a nested repository: its git paths are not ours to grant
        for name in filenames:
            seen += 1
            if seen > MAX_SCAN:
                return False
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                return False
            if st.st_nlink > 1 and not os.path.islink(os.path.join(dirpath, name)):
                return False
        seen += len(dirnames)
        if seen > MAX_SCAN:
            return False
    return True
