"""Is a bash command read-only? A fail-closed classifier over a real shell parse.

The parser is **bashlex** (a Python port of bash's own yacc grammar), chosen
over tree-sitter-bash because:

- it fails loudly: on anything it cannot parse (``case``, ``[[ ]]``,
  arithmetic, ``select``, ``coproc``, unbalanced quotes) it raises, and a raise
  means SEQUENTIAL. tree-sitter is error-tolerant by design: it returns a tree
  with ERROR/MISSING nodes that every check would have to remember to look for,
  so a gap fails open;
- its nodes already separate what matters here: commands, pipelines, lists and
  their operators, redirections with their targets, assignments, and the
  command/process substitutions inside words (with positions into the source);
- it is pure Python and already a dependency (no compiled grammar wheel).

A command is read-only (SAFE) only if every node is one of the kinds below and

- every simple command is on the allow-list (`argv_read_only`) with literal
  words where options matter (no glob, brace, expansion or substitution in the
  words of ``sed``/``sort``/``find``/``git``/…, since a file named ``-i``
  could become a flag);
- no redirection writes a file (only ``/dev/null`` and fd duplications);
- no assignment (``PATH=… ls`` picks another program), no background ``&``,
  no function definition;
- every command or input process substitution is itself read-only, and no
  output process substitution ``>(…)`` appears.

Anything else, including any exception, is SEQUENTIAL.
"""

from __future__ import annotations

import re
from typing import Any

import bashlex

from .._access import Concurrency
from ._bash_commands import FLAG_SENSITIVE, argv_read_only

__all__ = ["classify_bash", "is_read_only", "last_command_name"]

_NAME = re.compile(r"[A-Za-z0-9_.\[-]+\Z")
_LIST_OPERATORS = frozenset({";", "&&", "||", "\n"})
_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_INPUT_REDIRECTS = frozenset({"<", "<&", "<<<"})
_HEREDOC = frozenset({"<<", "<<-"})
_LOOPS = frozenset({"if", "for", "while", "until"})


def classify_bash(command: str) -> Concurrency:
    """SAFE if `command` provably only reads, else SEQUENTIAL (never raises)."""
    return Concurrency.SAFE if is_read_only(command) else Concurrency.SEQUENTIAL


def is_read_only(command: str) -> bool:
    """True if a real parse shows `command` can write no file (see module doc)."""
    if not command.strip():
        return False
    try:
        trees = bashlex.parse(command)
        return all(_node(tree, command) for tree in trees)
    except Exception:  # unparsable or unexpected: fail closed
        return False


def last_command_name(command: str) -> str | None:
    """The name of the last simple command run at top level, if it is plain."""
    try:
        trees = bashlex.parse(command)
    except Exception:  # no name when it cannot be parsed
        return None
    node: Any = trees[-1] if trees else None
    while node is not None and node.kind in ("list", "pipeline"):
        parts = [p for p in node.parts if p.kind not in ("operator", "pipe")]
        node = parts[-1] if parts else None
    if node is None or node.kind != "command":
        return None
    words = [p for p in node.parts if p.kind == "word"]
    return str(words[0].word) if words and not words[0].parts else None


def _node(node: Any, src: str) -> bool:
    kind = node.kind
    if kind == "command":
        return _command(node, src)
    if kind == "list":
        return all(
            p.op in _LIST_OPERATORS if p.kind == "operator" else _node(p, src)
            for p in node.parts
        )
    if kind == "pipeline":
        return all(
            p.kind == "pipe"
            or (p.kind == "reservedword" and p.word == "!")
            or (p.kind not in ("pipe", "reservedword") and _node(p, src))
            for p in node.parts
        )
    if kind == "compound":
        redirects = getattr(node, "redirects", None) or []
        return all(_redirect(r, src) for r in redirects) and all(
            p.kind == "reservedword" or _node(p, src) for p in node.list
        )
    if kind in _LOOPS:
        return all(
            p.kind == "reservedword"
            or (_word(p, src) if p.kind == "word" else _node(p, src))
            for p in node.parts
        )
    return False  # function definitions and anything unknown


def _command(node: Any, src: str) -> bool:
    words: list[Any] = []
    for part in node.parts:
        if part.kind == "word":
            words.append(part)
        elif part.kind == "redirect":
            if not _redirect(part, src):
                return False
        else:
            return False  # assignments and anything unknown
    if not words:
        return True  # only input redirections
    if not all(_word(w, src) for w in words):
        return False
    name = words[0]
    if not ((name.word == "[" or _literal(name, src)) and _NAME.match(name.word)):
        return False
    if name.word in FLAG_SENSITIVE and not all(_literal(w, src) for w in words[1:]):
        return False
    return argv_read_only([w.word for w in words])


def _word(word: Any, src: str) -> bool:
    """True if every expansion inside the word is harmless."""
    for part in getattr(word, "parts", None) or []:
        kind = part.kind
        if kind == "parameter":
            value = getattr(part, "value", "") or ""
            if "$(" in value or "`" in value:
                return False
        elif kind == "commandsubstitution":
            if not _node(part.command, src):
                return False
        elif kind == "processsubstitution":
            if src[part.pos[0]] != "<" or not _node(part.command, src):
                return False
        elif kind != "tilde":
            return False
    return True


def _literal(word: Any, src: str) -> bool:
    """True if the word is the same text however the shell expands it."""
    if getattr(word, "parts", None):
        return False
    raw = src[word.pos[0] : word.pos[1]]
    quote = ""
    escaped = False
    for char in raw:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            if char == quote:
                quote = ""
            elif char in "$`" and quote == '"':
                return False
        elif char in "'\"":
            quote = char
        elif char in "*?[{$`":
            return False
    return True


def _redirect(node: Any, src: str) -> bool:
    kind = node.type
    target = node.output
    if kind in _HEREDOC:
        body = node.heredoc.value if getattr(node, "heredoc", None) else ""
        return "$(" not in body and "`" not in body
    if kind in _INPUT_REDIRECTS:
        return not hasattr(target, "kind") or _word(target, src)
    if kind in _OUTPUT_REDIRECTS:
        if isinstance(target, int) or target == "-":
            return True  # 2>&1, >&2, >&- : duplicate or close a descriptor
        return (
            hasattr(target, "kind")
            and _literal(target, src)
            and target.word == "/dev/null"
        )
    return False  # <> opens for writing too; anything unknown
