"""Which files `grep` searches, and as what: one rule for both engines.

A file is binary, and skipped, when its first `SNIFF_BYTES` hold a NUL byte
(git's and grep's rule), unless it starts with a UTF-16 byte-order mark:
ripgrep decodes such a file (Windows tools write UTF-16 logs, exports,
``.reg`` files), so the Python engine does too (`Utf16Lines`). A UTF-8
byte-order mark is not part of the first line, as in ripgrep, so the
columns of both engines agree. A UTF-32 mark counts as binary (ripgrep does
not decode it either).
"""

from __future__ import annotations

import codecs
import io
from typing import BinaryIO, Literal

from ._textfile import is_binary, unicode_bom

__all__ = ["Utf16Lines", "searched_as"]

Encoding = Literal["utf-8", "utf-8-sig", "utf-16"]


def searched_as(head: bytes) -> Encoding | None:
    """How a file whose first bytes are `head` is searched; None: binary, skipped."""
    marked = unicode_bom(head)  # `read`'s names for the same marks
    if marked is not None:
        return "utf-16" if marked == "UTF-16" else None
    if is_binary(head):
        return None
    return "utf-8-sig" if head.startswith(codecs.BOM_UTF8) else "utf-8"


class Utf16Lines:
    """A UTF-16 file (byte-order mark first) read as UTF-8 lines, for `LineReader`.

    Lines end at a line feed only (a lone CR stays in its line, as in ripgrep);
    unpaired surrogates read as U+FFFD. Forward only: `seek` is not supported
    (the searches never look back). Closing it closes the file.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._text = io.TextIOWrapper(
            stream, encoding="utf-16", errors="replace", newline="\n"
        )

    def readline(self, size: int = -1, /) -> bytes:
        """Up to `size` characters of the current line, as UTF-8."""
        return self._text.readline(size).encode("utf-8")

    def read(self, size: int = -1, /) -> bytes:
        """Up to `size` characters, as UTF-8."""
        return self._text.read(size).encode("utf-8")

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Not supported: a decoded stream is read forward only."""
        raise io.UnsupportedOperation("a UTF-16 file is searched forward only")

    def close(self) -> None:
        """Close the file."""
        self._text.close()
