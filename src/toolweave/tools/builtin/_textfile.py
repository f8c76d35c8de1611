"""Plain file helpers for the built-in tools: sniffing, numbered lines, atomic writes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "MAX_LINE_CHARS",
    "SNIFF_BYTES",
    "atomic_write",
    "image_type",
    "is_binary",
    "iter_lines",
    "number_lines",
]

SNIFF_BYTES = 8192
"""How much of a file is looked at to tell text from binary."""

MAX_LINE_CHARS = 2000
"""Longer lines are cut in results (minified files would flood the context)."""

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


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


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {len(line)} chars]"


def iter_lines(stream: BinaryIO) -> Iterator[str]:
    """Decoded lines without terminators, cut at `MAX_LINE_CHARS`.

    Reads at most a bounded amount per line, so one huge line never sits in
    memory whole. Invalid UTF-8 is replaced, never an error.
    """
    limit = MAX_LINE_CHARS * 4 + 4
    while True:
        raw = stream.readline(limit)
        if not raw:
            return
        extra = 0
        while not raw.endswith(b"\n"):
            rest = stream.readline(limit)
            if not rest:
                break
            extra += len(rest)
            if rest.endswith(b"\n"):
                break
        text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
        if extra:
            text = (
                f"{text[:MAX_LINE_CHARS]}… [line cut: about {len(raw) + extra} bytes]"
            )
        yield _cut(text)


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
