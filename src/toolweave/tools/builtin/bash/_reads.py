"""What a command reads inside the workspace, when its words say so.

For the commands below, the files a run opens in the workspace are exactly
their path operands (or stdin), so those are declared as the call's read keys
and the sandbox lets it read nothing else there (`Sandbox.confine`'s
``reads``). Every other command reads the whole workspace, as before (None).

Operand rules are deliberately loose in one direction only: a word that is an
option's value (``head -n 5``) is declared as a path too. Declaring more is
harmless (a key that nothing else touches); declaring less cannot happen
unnoticed, because the kernel refuses the read and the command fails.

Not narrowed (None): ``rg``, ``tree``, ``fd`` and the git commands other
than ``git log`` read ignore files and attributes in the directories above
their operands; ``ls``/``du``/``find``/``grep -r`` with no operand read the
whole working directory; a path with a symlink or ``..`` in it inside the
workspace (under bwrap the link, or the directories ``..`` passes through,
would be missing), or the workspace itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ._parse import SimpleCommand
from ._targets import operand, real

__all__ = ["part_reads", "paths_read"]

_STDIN_READERS = frozenset(
    {"cat", "head", "tail", "wc", "sort", "uniq", "cut", "nl", "md5sum", "sha1sum"}
    | {"sha256sum", "cmp", "diff", "file", "stat", "grep", "egrep", "fgrep", "xxd"}
    | {"od", "comm", "sed", "awk", "jq", "tee"}
)
"""Read their operands, or stdin when they have none."""

_DIRECTORY_READERS = frozenset({"ls", "du", "find"})
"""Read their operands, or the working directory when they have none."""

_READ_NOTHING = frozenset(
    {"echo", "printf", "true", "false", "pwd", "basename", "dirname", "date"}
    | {"mkdir", "touch", "rm", "mv", "ln", ":"}
)
"""Read no file (their writes are granted, and a grant is readable)."""

_RECURSIVE = frozenset({"-r", "-R", "--recursive", "--dereference-recursive"})


def part_reads(part: SimpleCommand, root: Path) -> list[str] | None:
    """The workspace paths one simple command reads; None: the whole workspace."""
    name = part.name
    args = [str(a) for a in part.words[1:] if a is not None]
    if name is None or len(args) != len(part.words) - 1:
        return None
    if name in _READ_NOTHING:
        return []
    if name == "git":
        return _git_reads(args, root)
    if name == "cp":
        sources = [w for w in args if not w.startswith("-")][:-1]
        return paths_read(sources, root)
    if name not in _STDIN_READERS and name not in _DIRECTORY_READERS:
        return None
    if name == "find":
        words = _find_roots(args)
    else:
        words = [w for w in args if not w.startswith("-") or w == "-"]
        words = [w for w in words if w != "-"]
    if name in ("grep", "egrep", "fgrep") and words and not _has_pattern_flag(args):
        words = words[1:]  # the pattern
    recursive = name in ("grep", "egrep", "fgrep") and bool(_RECURSIVE & set(args))
    if not words and (name in _DIRECTORY_READERS or recursive):
        return None
    return paths_read(words, root)


def _has_pattern_flag(args: Sequence[str]) -> bool:
    return any(a in ("-e", "-f", "--regexp", "--file") for a in args)


def _find_roots(args: list[str]) -> list[str]:
    roots: list[str] = []
    for word in args:
        if word.startswith(("-", "(", "!")):
            break
        roots.append(word)
    return roots


def _git_reads(args: list[str], root: Path) -> list[str] | None:
    """``git log`` reads the repository and the mailmap only."""
    git = root / ".git"
    if not args or args[0] != "log" or git.is_symlink() or not git.exists():
        return None
    return paths_read([".git", ".mailmap"], root)


def paths_read(words: Sequence[str], root: Path) -> list[str] | None:
    """The read keys for these operands: real paths inside the workspace.

    Paths outside the workspace are readable anyway (no key, no rule). A path
    with a symlink in it inside the workspace, or the workspace itself: None.
    """
    found: list[str] = []
    for word in words:
        if ".." in Path(word).parts:
            return None  # bwrap: the directories on the way may not be mounted
        given = operand(word, root)
        path = Path(os.path.normpath(given))
        resolved = real(given)  # bash resolves `..` after links, normpath before
        inside = path.is_relative_to(root) or resolved.is_relative_to(root)
        if not inside:
            continue
        if resolved != path or resolved == root:
            return None
        found.append(str(resolved))
    return found
