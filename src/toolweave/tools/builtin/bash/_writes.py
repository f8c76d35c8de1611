"""What a writing bash command writes, when its parse says so: grants the sandbox enforces.

Issue 28 item 1, the part built so far: a command made of read-only parts and
``mkdir`` / ``touch`` with literal operands declares exactly the paths those
create or touch, at the granularity the kernel enforces:

- ``touch F`` of an existing regular file: the file itself (`Grant` ``file``);
- ``touch F`` of a new file: its parent directory (creations under it);
- ``mkdir [-p] D``: the nearest existing ancestor of D (or D when it exists).

The bash tool then runs the command read-only everywhere except those grants
(Landlock rules or bwrap binds, `Sandbox.confine`), so the declared write keys
are what the command *could* write, not what it is hoped to. Reads stay
declared wide (the whole workspace): reads are not confined yet.

Not declared (the command stays a barrier): any expansion or glob in an
operand; a target outside the workspace, the workspace root itself, or a grant
that holds or lies inside git's program-choosing paths; a ``cd``/``pushd``
anywhere in the command (operands would resolve elsewhere); a granted directory
holding a hard-linked file (a write through it would change a file elsewhere)
or more entries than `MAX_SCAN` (the check would cost more than it saves).
Symlinks are resolved: the grant names the real target (the kernel checks the
real path too).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..sandbox import Grant, protected_git_paths
from ._commands import argv_read_only
from ._parse import SimpleCommand, Unparsed, parse_script

__all__ = ["MAX_SCAN", "declared_writes"]

MAX_SCAN = 2_000
"""Entries of a granted directory checked for hard links at most."""

_MKDIR_FLAGS = frozenset({"-p", "--parents", "-v", "--verbose"})
_TOUCH_FLAGS = frozenset({"-a", "-c", "-m", "--no-create"})
_MOVES_CWD = frozenset({"cd", "pushd", "popd"})


def declared_writes(command: str, root: Path) -> tuple[Grant, ...] | None:
    """The grants `command` needs, or None when its writes are not statically known.

    `root` is the resolved workspace root and the command's working directory.
    Never raises. An empty answer never happens: a command with no writer is
    the classifier's business (read-only), not this module's.
    """
    script = parse_script(command)
    if isinstance(script, Unparsed) or script.hazards or script.opaque:
        return None
    grants: set[Grant] = set()
    writers = 0
    for part in script.commands:
        if part.name in _MOVES_CWD:
            return None
        found = _writer_grants(part, root)
        if found is not None:
            grants.update(found)
            writers += 1
        elif not argv_read_only(part.words):
            return None
    if not writers or not grants:
        return None
    protected = [Path(os.path.realpath(p)) for p in protected_git_paths(root)]
    for grant in grants:
        if not _allowed(grant, root, protected):
            return None
    return tuple(sorted(grants))


def _writer_grants(part: SimpleCommand, root: Path) -> list[Grant] | None:
    name, args = part.name, part.words[1:]
    if name not in ("mkdir", "touch") or any(a is None for a in args):
        return None
    words = [str(a) for a in args]
    flags = _MKDIR_FLAGS if name == "mkdir" else _TOUCH_FLAGS
    operands = [w for w in words if not w.startswith("-")]
    if not operands or any(w not in flags for w in words if w.startswith("-")):
        return None
    if "--" in words:
        return None
    grants: list[Grant] = []
    for operand in operands:
        target = Path(operand) if operand.startswith("/") else root / operand
        grant = _mkdir_grant(target) if name == "mkdir" else _touch_grant(target)
        if grant is None:
            return None
        grants.append(grant)
    return grants


def _touch_grant(target: Path) -> Grant | None:
    real = Path(os.path.realpath(target))
    if real.is_file():
        return None if real.stat().st_nlink > 1 else Grant(str(real), "file")
    if os.path.lexists(target):
        return None  # a directory, a dangling link, a device: not this rule
    parent = real.parent
    return Grant(str(parent), "dir") if parent.is_dir() else None


def _mkdir_grant(target: Path) -> Grant | None:
    real = Path(os.path.realpath(target))
    at = real
    while not at.exists():
        if os.path.lexists(at) or at.parent == at:
            return None  # a dangling link on the way
        at = at.parent
    return Grant(str(at), "dir") if at.is_dir() else None


def _allowed(grant: Grant, root: Path, protected: list[Path]) -> bool:
    path = Path(grant.path)
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
