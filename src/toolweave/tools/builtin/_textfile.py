"""Plain file helpers for the built-in tools: opening, sniffing, numbered lines, atomic writes."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from ..._exceptions import ToolError

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_SCAN_LINE_BYTES",
    "SNIFF_BYTES",
    "atomic_write",
    "cut_line",
    "describe_os_error",
    "image_type",
    "is_binary",
    "iter_lines",
    "number_lines",
    "open_regular",
    "reporting_os_errors",
    "unicode_bom",
]

SNIFF_BYTES = 8192
"""How much of a file is looked at to tell text from binary."""

MAX_LINE_CHARS = 2000
"""Longer lines are cut in results (minified files would flood the context)."""

MAX_SCAN_LINE_BYTES = 64 * 1024 * 1024
"""Longest line `iter_lines` scans for its end; it stops at a longer one."""

_CHECK_EVERY = 256
"""Reads (of at most ~8 KB each) between two cancellation checks in `iter_lines`."""

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


T = TypeVar("T")

_OPEN_FLAGS = (
    os.O_RDONLY
    | os.O_NONBLOCK
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
"""How `open_regular` opens: never blocking, never through a final link.

``O_NONBLOCK`` is the point: opening a FIFO for reading blocks in ``open()``
until a writer appears (forever, if none does), and a thread stuck there cannot
be cancelled. With it, ``open()`` of any file returns at once, and the type
check on the open descriptor refuses everything but a regular file. For a
regular file the flag changes nothing. ``O_NOFOLLOW`` refuses a link swapped in
for the already-resolved path (see `Workspace`).
"""


def describe_os_error(exc: OSError) -> str:
    """An OS error's reason without the (possibly huge) path it carries."""
    return exc.strerror or type(exc).__name__


def reporting_os_errors(fn: Callable[[], T], tool: str, path: str) -> T:
    """`fn()`, with an OS error it lets out turned into a `ToolError`.

    The tools turn the OS errors they expect into specific messages; this is the
    net for the rest (a permission denied on a parent directory, an I/O error):
    the model gets the reason and a short form of the path it gave, not the
    exception's repr with the full resolved path.
    """
    try:
        return fn()
    except OSError as exc:
        shown = repr(path) if len(path) <= 200 else f"{path[:200]!r}…"
        raise ToolError(f"{tool} {shown} failed: {describe_os_error(exc)}") from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: Path, rel: str) -> BinaryIO:
    """`path` opened for reading in binary mode, if it is a regular file.

    The check is made on the open descriptor (``fstat``), not on the name, so
    nothing swapped in between a check and the open gets through, and the open
    itself cannot block (see `_OPEN_FLAGS`): a FIFO with no writer, a device
    like ``/dev/zero`` or a terminal is refused at once, never read.

    Raises:
        ToolError: the file is missing, unreadable, or not a regular file
            (the message names which, and `rel`, never the OS's full path).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise ToolError(f"File not found: {rel}.") from None
    except OSError as exc:
        raise ToolError(f"cannot open {rel}: {describe_os_error(exc)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ToolError(
                f"{rel} is {_kind(mode)}, not a regular file; the file tools only"
                " read and change regular files"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)


def unicode_bom(head: bytes) -> str | None:
    """The encoding a UTF-16/32 byte-order mark at the start of `head` names, or None.

    Such text is full of NUL bytes, so without this it would pass for binary;
    the tools (UTF-8 only) refuse it with a message that says what it is.
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    return None


def image_type(head: bytes) -> str | None:
    """The media type of an image file from its first bytes, or None."""
    for magic, media_type in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media_type
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_binary(head: bytes) -> bool:
    """True if the first bytes of a file look binary (a NUL byte, like git and grep)."""
    return b"\x00" in head


def cut_line(line: str) -> str:
    """`line` cut at `MAX_LINE_CHARS`, saying how long it was."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} chars]"


def _decode(raw: bytes, cut: bool) -> tuple[str, bool]:
    """`raw` decoded as UTF-8 with invalid bytes replaced; True if any were.

    A `cut` line may end inside a multi-byte character (the cut is by bytes):
    that partial character is dropped, not counted as invalid.
    """
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError as exc:
        if cut and exc.reason == "unexpected end of data" and exc.end == len(raw):
            return _decode(raw[: exc.start], cut=False)
        return raw.decode("utf-8", errors="replace"), False


def iter_lines(
    stream: BinaryIO,
    on_invalid: Callable[[], None] | None = None,
    check: Callable[[], None] | None = None,
) -> Iterator[str]:
    """Decoded lines without terminators, cut at `MAX_LINE_CHARS`.

    Reads at most a bounded amount per line, so one huge line never sits in
    memory whole. Invalid UTF-8 is replaced, never an error; `on_invalid` is
    called (just before such a line is yielded) so a caller can say so rather
    than pass the replacement characters off as the file's content.

    Time is bounded too. A line over `MAX_SCAN_LINE_BYTES` (a 1 TB sparse file
    is one line of NUL bytes, and costs no disk to make) is not scanned to its
    end: it is yielded cut, with a note, and the iteration stops there. `check`
    (a cancellation check) is called every `_CHECK_EVERY` reads, so a caller
    paging deep into a huge file stops at its deadline instead of running on in
    an abandoned thread.
    """
    tick = _Ticker(check)
    while True:
        raw, extra, endless = _read_line(stream, tick)
        if not raw:
            return
        text, valid = _decode(raw.rstrip(b"\n").rstrip(b"\r"), cut=extra > 0)
        if not valid and on_invalid is not None:
            on_invalid()
        if endless:
            yield (
                f"{text[:MAX_LINE_CHARS]}… [line cut: over {MAX_SCAN_LINE_BYTES:,}"
                " bytes; the file is not read past it (use bash, e.g. `tail -c`)]"
            )
            return
        if extra:
            text = (
                f"{text[:MAX_LINE_CHARS]}… [line cut: about {len(raw) + extra} bytes]"
            )
        yield cut_line(text)


class _Ticker:
    """Calls a cancellation check once every `_CHECK_EVERY` ticks."""

    __slots__ = ("check", "count")

    def __init__(self, check: Callable[[], None] | None) -> None:
        self.check = check
        self.count = 0

    def __call__(self) -> None:
        self.count += 1
        if self.check is not None and self.count % _CHECK_EVERY == 0:
            self.check()


def _read_line(stream: BinaryIO, tick: _Ticker) -> tuple[bytes, int, bool]:
    """The next line's first bytes, how many more it had, and whether it was endless.

    Keeps at most one bounded read of the line; the rest is read and dropped,
    up to `MAX_SCAN_LINE_BYTES` (then the third value is True).
    """
    limit = MAX_LINE_CHARS * 4 + 4
    tick()
    raw = stream.readline(limit)
    extra = 0
    while raw and not raw.endswith(b"\n"):
        tick()
        if len(raw) + extra >= MAX_SCAN_LINE_BYTES:
            return raw, extra, True
        rest = stream.readline(limit)
        if not rest:
            break
        extra += len(rest)
        if rest.endswith(b"\n"):
            break
    return raw, extra, False


def number_lines(lines: list[str], first: int) -> str:
    """Lines numbered like ``cat -n``: right-aligned number, a tab, the line."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one rename, keeping an existing file's mode.

    A crash or cancel mid-way leaves either the old file or the new one, never a
    half-written file.
    """
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    """The process umask, read without changing it (os.umask would race threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
