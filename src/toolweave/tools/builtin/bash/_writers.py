"""The writing commands whose targets their words name, and the grants they need.

One rule per command, each the narrowest set the kernel can enforce that still
lets the command do what bash would (see `_targets`):

| command | grants |
|---|---|
| ``mkdir [-p] D`` | creations beneath D's nearest existing ancestor |
| ``touch F``, ``tee [-a] F``, ``> F`` | F (existing) or creations in its parent |
| ``cp [-rRapfvnu] SRC… DST`` | DST (a file), creations in DST (a directory) or its parent |
| ``mv [-fvnu] SRC… DST`` | every change in each SRC's directory, and in DST or its parent |
| ``rm [-frRvd] F…`` | every change in each F's directory |
| ``ln -s[fnv] TARGET LINK`` | every change in LINK's directory (or LINK, a directory) |
| ``sed -i [-Ernsz] [-e S]… F…`` | every change in each F's directory (a temp file renamed) |
| ``git add …`` / ``git commit -m …`` | ``.git`` (its program files kept or put back) |

Anything else (another option, ``--``, a missing operand, ``-t DIR``) is not
declared: None, and the command stays what it was. `_writes` checks the
grants against the workspace afterwards (root, ``.git``, hard links).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..sandbox import Grant
from ._parse import SimpleCommand
from ._sed import sed_script_read_only
from ._targets import create_grant, operand, real, tree_grant, write_grant

__all__ = ["WRITERS", "writer_grants"]

_Rule = Callable[[list[str], Path], list[Grant] | None]


def _split(words: list[str], letters: str, longs: frozenset[str]) -> list[str] | None:
    """The operands, if every option is a cluster of `letters` or one of `longs`."""
    operands: list[str] = []
    for word in words:
        if word == "--":
            return None
        if word.startswith("--"):
            if word not in longs:
                return None
        elif word.startswith("-") and word != "-":
            if not word[1:] or any(c not in letters for c in word[1:]):
                return None
        else:
            operands.append(word)
    return operands


def _mkdir(words: list[str], root: Path) -> list[Grant] | None:
    ops = _split(words, "pv", frozenset({"--parents", "--verbose"}))
    if not ops:
        return None
    grants = [create_grant(operand(w, root)) for w in ops]
    return None if None in grants else [g for g in grants if g]


def _touch(words: list[str], root: Path) -> list[Grant] | None:
    return _each(_split(words, "acm", frozenset({"--no-create"})), root, write_grant)


def _tee(words: list[str], root: Path) -> list[Grant] | None:
    return _each(_split(words, "aip", frozenset({"--append"})), root, write_grant)


def _each(
    ops: list[str] | None, root: Path, grant: Callable[[Path], Grant | None]
) -> list[Grant] | None:
    if not ops:
        return None
    grants = [grant(operand(w, root)) for w in ops]
    return None if None in grants else [g for g in grants if g]


def _into(target: Path, many: bool, kind: str) -> Grant | None:
    """The destination of cp/mv: into a directory, or a file named `target`."""
    resolved = real(target)
    if resolved.is_dir():
        return Grant(str(resolved), "dir" if kind == "cp" else "tree")
    if many:
        return None  # several sources need a directory
    return write_grant(target) if kind == "cp" else tree_grant(target)


def _cp(words: list[str], root: Path) -> list[Grant] | None:
    longs = frozenset({"--recursive", "--force", "--verbose", "--no-clobber"})
    ops = _split(words, "rRapfvnu", longs)
    if ops is None or len(ops) < 2:
        return None
    grant = _into(operand(ops[-1], root), len(ops) > 2, "cp")
    return None if grant is None else [grant]


def _mv(words: list[str], root: Path) -> list[Grant] | None:
    ops = _split(words, "fvnu", frozenset({"--force", "--verbose", "--no-clobber"}))
    if ops is None or len(ops) < 2:
        return None
    grants = [tree_grant(operand(w, root)) for w in ops[:-1]]
    grants.append(_into(operand(ops[-1], root), len(ops) > 2, "mv"))
    return None if None in grants else [g for g in grants if g]


def _rm(words: list[str], root: Path) -> list[Grant] | None:
    longs = frozenset({"--force", "--recursive", "--verbose", "--dir"})
    return _each(_split(words, "frRvd", longs), root, tree_grant)


def _ln(words: list[str], root: Path) -> list[Grant] | None:
    ops = _split(words, "sfnv", frozenset({"--symbolic", "--force", "--verbose"}))
    symbolic = any(w in ("--symbolic",) or (w[:1] == "-" and "s" in w) for w in words)
    if ops is None or len(ops) != 2 or not symbolic:
        return None  # a hard link would give a file a second name
    link = operand(ops[1], root)
    options = [w for w in words if w.startswith("-") and not w.startswith("--")]
    if real(link).is_dir() and not any("n" in w for w in options):
        return [Grant(str(real(link)), "tree")]
    grant = tree_grant(link)
    return None if grant is None else [grant]


def _sed_in_place(words: list[str], root: Path) -> list[Grant] | None:
    scripts: list[str] = []
    files: list[str] = []
    in_place = False
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-i", "--in-place"):
            in_place = True
        elif word in ("-e", "--expression") and i + 1 < len(words):
            scripts.append(words[i + 1])
            i += 1
        elif word.startswith("-") and word != "-":
            if word[1:] not in ("E", "r", "n", "s", "z", "u"):
                return None
        else:
            files.append(word)
        i += 1
    if not scripts and files:
        scripts.append(files.pop(0))
    if not in_place or not files or not all(sed_script_read_only(s) for s in scripts):
        return None
    paths = [operand(f, root) for f in files]
    if any(p.is_symlink() or not p.is_file() for p in paths):
        return None  # sed -i would replace a link with a file
    return _each(files, root, tree_grant)


_COMMIT_FLAGS = frozenset(
    {"-a", "--all", "-q", "--quiet", "-s", "--signoff", "--amend", "--no-edit"}
    | {"--allow-empty", "-n", "--no-verify", "-v", "--verbose"}
)
_ADD_FLAGS = frozenset({"-A", "--all", "-u", "--update", "-v", "--verbose", "-f"})


def _git(words: list[str], root: Path) -> list[Grant] | None:
    """``git add`` / ``git commit -m``: they write ``.git`` (reads stay wide)."""
    git = root / ".git"
    if not words or git.is_symlink() or not git.is_dir():
        return None
    sub, rest = words[0], words[1:]
    if sub == "add":
        if any(w.startswith("-") and w not in _ADD_FLAGS for w in rest):
            return None  # -p/-i/-e are interactive, --chmod, --pathspec-from-file
    elif sub == "commit":
        if not _commit_message(rest):
            return None
    else:
        return None
    return [Grant(os.path.realpath(git), "git")]


def _commit_message(rest: list[str]) -> bool:
    """Every option known, and a message given (no editor would open)."""
    message = "--no-edit" in rest
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "--message" and i + 1 < len(rest):
            message, i = True, i + 2
            continue
        if word.startswith("--message="):
            message = True
        elif word.startswith("-") and not word.startswith("--") and "m" in word:
            flags, _, glued = word[1:].partition("m")  # -qm MSG, -am MSG, -mMSG
            if any(f"-{c}" not in _COMMIT_FLAGS for c in flags):
                return False
            if not glued and i + 1 >= len(rest):
                return False
            message, i = True, i + (1 if glued else 2)
            continue
        elif word not in _COMMIT_FLAGS:
            return False
        i += 1
    return message


WRITERS: dict[str, _Rule] = {
    "mkdir": _mkdir,
    "touch": _touch,
    "tee": _tee,
    "cp": _cp,
    "mv": _mv,
    "rm": _rm,
    "ln": _ln,
    "sed": _sed_in_place,
    "git": _git,
}
"""The writers declared from their words, by command name."""


def writer_grants(part: SimpleCommand, root: Path) -> list[Grant] | None:
    """The grants one simple command needs, or None if it is no writer we declare."""
    rule = WRITERS.get(part.name or "")
    args = part.words[1:]
    if rule is None or any(a is None for a in args):
        return None
    return rule([str(a) for a in args], root)
