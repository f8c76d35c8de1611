r"""Text UTF-8 can carry: each lone surrogate replaced by U+FFFD.

A Python string may hold a lone surrogate (a prompt from a non-UTF-8 terminal,
a model's ``"\ud800"`` escape, a file name decoded with surrogateescape); no
UTF-8 encoding exists for it, and the session store, the provider SDKs and
the terminal all encode strict UTF-8. One helper for every layer that must
hand text on.
"""

from __future__ import annotations

import re

__all__ = ["is_utf8_encodable", "utf8_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def is_utf8_encodable(text: str) -> bool:
    """False if `text` holds a lone surrogate (no UTF-8 encoding exists for it)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def utf8_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the text itself if none)."""
    if is_utf8_encodable(text):
        return text
    return _SURROGATE.sub("\ufffd", text)
