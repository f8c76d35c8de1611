"""Lines of any length: read with bounded memory, told by their real length, cut with a marker.

`read` and the pure-Python `grep` read files line by line through `LineReader`.
A line is decoded to its end (up to `MAX_SCAN_LINE_BYTES`), so its real length
in characters is always known, while only the part a caller keeps is held in
memory: `read` keeps `MAX_LINE_CHARS` characters from the column it starts at,
`grep` keeps the whole line, since a match can be anywhere in it.

Lengths and columns count characters (Unicode code points, as Python's `str`),
never bytes, so a cut never splits a character; invalid UTF-8 counts as the
U+FFFD replacement characters it is shown as.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_SCAN_LINE_BYTES",
    "Line",
    "LineReader",
    "LineSource",
    "cut_line",
    "shown_line",
]

MAX_LINE_CHARS = 2000
"""Longer lines are cut in results (minified files would flood the context)."""

MAX_SCAN_LINE_BYTES = 64 * 1024 * 1024
"""Longest line scanned for its end; a longer one ends the file's reading there."""

_READ_BYTES = MAX_LINE_CHARS * 4 + 4
"""Bytes asked of one `readline`: a line of `MAX_LINE_CHARS` characters fits."""

_CHECK_EVERY = 256
"""Reads between two cancellation checks."""


class LineSource(Protocol):
    """What `LineReader` reads: a binary file, or a decoded one (`Utf16Lines`)."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line (its newline kept), at most about `size` bytes of it."""
        ...

    def read(self, size: int = -1, /) -> bytes:
        """Up to `size` bytes."""
        ...

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Move (`LineReader.at_end` steps back one byte)."""
        ...


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a file, or the part of it a caller kept."""

    text: str
    """The kept characters (line terminator excluded)."""
    start: int
    """0-based column (character index) where `text` begins in the line."""
    length: int | None
    """The line's real length in characters; None if it was over
    `MAX_SCAN_LINE_BYTES` and not scanned to its end (the reader stops there)."""
    invalid: bool = False
    """True if the line held bytes that are not UTF-8 (shown as U+FFFD)."""

    @property
    def whole(self) -> bool:
        """True if `text` is the whole line."""
        return self.start == 0 and self.length == len(self.text)


def cut_line(line: str, *, hint: str = "") -> str:
    """`line` cut at `MAX_LINE_CHARS`, saying how long it was (and `hint`, if given)."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    how = f"; {hint}" if hint else ""
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line):,} chars{how}]"


class _Utf8:
    """An incremental UTF-8 decoder that replaces bad bytes and says it did."""

    __slots__ = ("_decoder", "invalid")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.invalid = False

    def decode(self, data: bytes, final: bool = False) -> str:
        if not self.invalid:
            state = self._decoder.getstate()
            try:
                return self._decoder.decode(data, final)
            except UnicodeDecodeError:
                self.invalid = True
                replacing = codecs.getincrementaldecoder("utf-8")("replace")
                replacing.setstate(state)
                self._decoder = replacing
        return self._decoder.decode(data, final)


def _decode_whole(raw: bytes) -> tuple[str, bool]:
    """`raw` decoded as UTF-8 with invalid bytes replaced; True if any were."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


class _Keep:
    """The characters of columns [start, stop) of a line decoded piece by piece."""

    __slots__ = ("count", "parts", "start", "stop")

    def __init__(self, start: int, stop: int | None) -> None:
        self.start, self.stop = start, stop
        self.count = 0
        self.parts: list[str] = []

    def add(self, piece: str) -> None:
        lo, hi = self.count, self.count + len(piece)
        self.count = hi
        stop = hi if self.stop is None else min(hi, self.stop)
        if max(lo, self.start) < stop:
            self.parts.append(piece[max(lo, self.start) - lo : stop - lo])


class LineReader:
    """Reads a binary stream line by line; see the module docstring.

    Memory: one bounded read of the line plus what the caller keeps. Time: a
    line is scanned to its end, at most `MAX_SCAN_LINE_BYTES` (a 1 TB sparse
    file is one line of NUL bytes and costs no disk to make); past that the
    line is returned with ``length=None`` and the reader ends, since where the
    next line starts is not known. `check` (a cancellation check) is called
    every `_CHECK_EVERY` reads, so a caller paging deep into a huge file stops
    at its deadline instead of running on in an abandoned thread.
    """

    def __init__(
        self, stream: LineSource, check: Callable[[], None] | None = None
    ) -> None:
        self._stream = stream
        self._check = check
        self._reads = 0
        self._ended = False

    def _read(self) -> bytes:
        self._reads += 1
        if self._check is not None and self._reads % _CHECK_EVERY == 0:
            self._check()
        return self._stream.readline(_READ_BYTES)

    def at_end(self) -> bool:
        """True if no line follows (looked at without reading the next line)."""
        if self._ended:
            return True
        if not self._stream.read(1):
            return True
        self._stream.seek(-1, 1)
        return False

    def skip(self) -> bool:
        """Pass over the next line without decoding it; False at the end of the file."""
        if self._ended:
            return False
        raw = self._read()
        if not raw:
            self._ended = True
            return False
        seen = len(raw)
        while not raw.endswith(b"\n"):
            if seen >= MAX_SCAN_LINE_BYTES:
                self._ended = True
                return True
            raw = self._read()
            if not raw:
                break
            seen += len(raw)
        return True

    def next(self, *, start: int = 0, keep: int | None = MAX_LINE_CHARS) -> Line | None:
        """The next line, keeping `keep` characters from column `start` (None: all).

        None at the end of the file (or after a line over `MAX_SCAN_LINE_BYTES`).
        """
        if self._ended:
            return None
        raw = self._read()
        if not raw:
            self._ended = True
            return None
        if raw.endswith(b"\n") or len(raw) < _READ_BYTES:  # the whole line at once
            text, invalid = _decode_whole(raw.rstrip(b"\n").rstrip(b"\r"))
            stop = None if keep is None else start + keep
            return Line(text[start:stop], start, len(text), invalid)
        return self._long(raw, start, keep)

    def _long(self, raw: bytes, start: int, keep: int | None) -> Line:
        """A line longer than one read: decoded piece by piece to its end."""
        decoder = _Utf8()
        kept = _Keep(start, None if keep is None else start + keep)
        seen = 0
        pending = b""  # a trailing CR, held until it is known whether LF follows
        while True:
            seen += len(raw)
            chunk = pending + raw
            if chunk.endswith(b"\n"):
                kept.add(decoder.decode(chunk.rstrip(b"\n").rstrip(b"\r"), final=True))
                length: int | None = kept.count
                break
            pending = b"\r" if chunk.endswith(b"\r") else b""
            kept.add(decoder.decode(chunk[: len(chunk) - len(pending)]))
            if seen >= MAX_SCAN_LINE_BYTES:
                self._ended = True
                length = None
                break
            raw = self._read()
            if not raw:  # the file ends without a newline
                kept.add(decoder.decode(pending.rstrip(b"\r"), final=True))
                length = kept.count
                break
        return Line("".join(kept.parts), start, length, decoder.invalid)


def shown_line(line: Line, number: int) -> str:
    """`line` (line `number` of its file) as `read` shows it: whole, or cut with a marker.

    The marker gives the real length, the columns shown, and the ``offset`` and
    ``column`` that read on, so the model can page through a long line as
    through a long file.
    """
    if line.whole:
        return line.text
    head = "…" if line.start else ""
    end = line.start + len(line.text)
    shown = f"columns {line.start + 1:,}-{end:,} shown"
    if line.length is None:
        return (
            f"{head}{line.text}… [line cut: over {MAX_SCAN_LINE_BYTES:,} bytes; the"
            " file is not read past it (use bash, e.g. `tail -c`); "
            f"{shown}; read with offset={number} column={end + 1} for more]"
        )
    if end < line.length:
        return (
            f"{head}{line.text}… [line cut: {line.length:,} chars; {shown}; read"
            f" with offset={number} column={end + 1} for more]"
        )
    return f"{head}{line.text} [line cut: {line.length:,} chars; {shown}, to its end]"
