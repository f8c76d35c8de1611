"""Headless Chromium for the timeline tests, and a tiny PNG reader to look at its pixels."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """The Chromium binary (Debian's ``chromium``), if installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium(binary: str, page: Path, *args: str) -> str:
    """Run headless Chromium on `page` with a fresh profile; return its stdout."""
    with tempfile.TemporaryDirectory(prefix="tw-chromium-") as profile:
        done = subprocess.run(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                *args,
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


class BarCollector(HTMLParser):
    """Collects the ``rect.bar`` elements of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.bars: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if (
            tag == "rect"
            and "bar" in found.get("class", "").split()
            and "data-call-id" in found
        ):
            self.bars.append(found)


def bars_in(dom: str) -> list[dict[str, str]]:
    """Every timeline bar in `dom`, with its attributes."""
    collector = BarCollector()
    collector.feed(dom)
    return collector.bars


def _unfilter(raw: bytes, width: int, height: int, bpp: int) -> list[bytes]:
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    pos = 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1 : pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return rows


def png_colours(path: Path) -> tuple[int, int, set[tuple[int, int, int]]]:
    """Width, height and the set of RGB colours of an 8-bit RGB(A) PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = _unfilter(zlib.decompress(idat), width, height, bpp)
    colours = {tuple(row[i : i + 3]) for row in rows for i in range(0, len(row), bpp)}
    return width, height, colours  # type: ignore[return-value]


def hex_rgb(value: str) -> tuple[int, int, int]:
    """``#2f9e44`` -> (47, 158, 68)."""
    value = value.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)
