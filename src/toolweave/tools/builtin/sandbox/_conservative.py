"""The few commands that may run in parallel with no OS sandbox at all."""

from __future__ import annotations

import re

__all__ = ["conservative_read_only"]

_CORE = frozenset(
    {"basename", "cat", "dirname", "du", "echo", "false", "grep", "head", "ls"}
    | {"pwd", "realpath", "stat", "tail", "true", "wc"}
)
_PLAIN_WORDS = re.compile(r"[A-Za-z0-9_./,:=@%+ -]+\Z")


def conservative_read_only(command: str) -> bool:
    """True for the core that may run in parallel with no sandbox at all.

    One simple command from a small set with no option that writes or runs a
    program, made only of plain words: no quote, expansion, glob, redirection,
    operator or newline. It only ever narrows the classifier's verdict.
    """
    if not _PLAIN_WORDS.match(command):
        return False
    words = command.split()
    return bool(words) and words[0] in _CORE
