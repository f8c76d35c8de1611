"""Is a sed script read-only? Only printing and stream edits: no w, W or e command or flag."""

from __future__ import annotations

import re

__all__ = ["sed_script_read_only"]

_SED_ADDRESS = re.compile(
    r"(?:\d+(?:~\d+)?|\$|/(?:[^/\\]|\\.)*/[IM]*)"
    r"(?:\s*,\s*(?:\d+|\$|/(?:[^/\\]|\\.)*/[IM]*|[+~]\d+))?\s*!?\s*"
)
_SED_SIMPLE = set("pdqQ=lnNPDhHgGxz}")
_SED_TO_EOL = set("aic")  # text up to the line end
_SED_FILE = set("rR")  # a file to read, up to the line end
_SED_LABEL = set("btT:")
_SED_LABEL_END = re.compile(r"[ \t]*[^\s;}#]*")
"""GNU sed ends a label at a blank, ``;``, ``}`` or ``#`` (``b x; w out`` writes):
ending it at the first of these reads *more* of the script as commands."""
_SED_S_FLAGS = re.compile(r"[gpiImM0-9]*")


def _sed_delimited(script: str, i: int, parts: int) -> int:
    """Index after `parts` delimited fields starting at the delimiter script[i]."""
    delim = script[i]
    if delim in "\\\n":
        return -1
    i += 1
    for _ in range(parts):
        while i < len(script) and script[i] != delim:
            i += 2 if script[i] == "\\" else 1
        if i >= len(script):
            return -1
        i += 1
    return i


def _sed_command_end(script: str, i: int) -> int:
    """Index just after the sed command at script[i], or -1 if it may write."""
    cmd = script[i]
    if cmd in "sy":
        i = _sed_delimited(script, i + 1, 2)
        if i < 0:
            return -1
        flags = _SED_S_FLAGS.match(script, i)
        return flags.end() if flags else i
    if cmd in _SED_LABEL:
        label = _SED_LABEL_END.match(script, i + 1)
        return label.end() if label else -1
    if cmd in _SED_TO_EOL or cmd in _SED_FILE:
        end = script.find("\n", i)
        end = len(script) if end < 0 else end
        if cmd in _SED_FILE and any(c in script[i:end] for c in ";}#"):
            return -1  # a file name that another sed might end early
        return end
    if cmd in _SED_SIMPLE:
        i += 1
        while i < len(script) and script[i].isdigit():
            i += 1
        return i
    return -1  # w, W, e and anything unknown


def sed_script_read_only(script: str) -> bool:
    """True if a sed script only prints and edits the stream (no w, W, e)."""
    i = 0
    while i < len(script):
        if script[i] in " \t\n;":
            i += 1
            continue
        match = _SED_ADDRESS.match(script, i)
        i = match.end() if match and match.end() > i else i
        if i >= len(script):
            return False
        if script[i] == "{":  # a block: its commands follow directly
            i += 1
            continue
        i = _sed_command_end(script, i)
        if i < 0 or (i < len(script) and script[i] not in " \t\n;}"):
            return False
    return True
