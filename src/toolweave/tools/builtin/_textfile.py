"""Plain file helpers for the built-in tools: opening, sniffing, numbered lines, atomic writes.

Lines of any length are read by `_longline.LineReader` (re-exported here: the
line limits and `cut_line`).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

from ..._exceptions import ToolError
from ._longline import MAX_LINE_CHARS, MAX_SCAN_LINE_BYTES, cut_line

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_SCAN_LINE_BYTES",
    "SNIFF_BYTES",
    "atomic_write",
    "cut_line",
    "describe_os_error",
    "image_type",
    "is_binary",
    "number_lines",
    "open_regular",
    "reporting_os_errors",
    "unicode_bom",
]

SNIFF_BYTES = 8192
"""How much of a file is looked at to tell text from binary."""

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
