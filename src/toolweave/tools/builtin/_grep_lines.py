"""How `grep` shows a line in content mode, the same for both engines.

A line of at most `MAX_LINE_CHARS` characters is shown whole. A longer
matching line (minified JS, JSON, lock files, SVG) shows a window around each
of its first `MAX_WINDOWS` matches, every cut part replaced by
``[… N chars …]``, and ends with a marker giving the line's real length, the
columns of its matches and the `read` call that shows the line from the first
window on. A longer context line shows its first `MAX_LINE_CHARS` characters
and a marker. Columns are 1-based and count characters, never bytes, so a cut
never splits a character (ripgrep's byte offsets are converted).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._longline import MAX_LINE_CHARS, MAX_SCAN_LINE_BYTES

__all__ = [
    "COUNTED_MATCHES",
    "MAX_WINDOWS",
    "context_line",
    "match_line",
]

MAX_WINDOWS = 5
"""Matches of one long line shown, each in its own window."""

AROUND = 80
"""Characters shown on either side of a match."""

MATCH_CHARS = 200
"""Characters of one match shown; a longer match is cut there."""

COUNTED_MATCHES = 1000
"""Matches of one line counted at most (a marker says "over" past it)."""


def _windows(spans: Sequence[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """Merged [start, stop) windows around the first `MAX_WINDOWS` spans."""
    windows: list[tuple[int, int]] = []
    for start, stop in spans[:MAX_WINDOWS]:
        lo = max(0, start - AROUND)
        hi = min(length, min(stop, start + MATCH_CHARS) + AROUND)
        if windows and lo <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], hi))
        else:
            windows.append((lo, hi))
    return windows


def _gap(chars: int) -> str:
    return f"[… {chars:,} chars …]"


def _count(count: int) -> str:
    if count > COUNTED_MATCHES:
        return f"over {COUNTED_MATCHES:,} matches"
    return "1 match" if count == 1 else f"{count:,} matches"


def match_line(
    text: str,
    spans: Sequence[tuple[int, int]],
    *,
    count: int,
    rel: str,
    number: int,
    complete: bool = True,
) -> str:
    """A matching line: whole, or windows around its matches with markers.

    `spans` are the [start, stop) character offsets of its first matches, in
    order (at least the first `MAX_WINDOWS`); `count` how many it has, counted
    up to `COUNTED_MATCHES` + 1. `complete` is False when `text` is only the
    line's first `MAX_SCAN_LINE_BYTES` (the Python engine searches no further).
    """
    if complete and len(text) <= MAX_LINE_CHARS:
        return text
    length = len(text)
    windows = _windows(spans, length) or [(0, min(length, MAX_LINE_CHARS))]
    parts: list[str] = []
    done = 0
    for lo, hi in windows:
        if lo > done:
            parts.append(_gap(lo - done))
        parts.append(text[lo:hi])
        done = hi
    if done < length:
        parts.append(_gap(length - done) if complete else "…")
    columns = ", ".join(f"{start + 1:,}" for start, _ in spans[:MAX_WINDOWS])
    at = "column" if count == 1 else "columns"
    shown = f"{_count(count)}, at {at} {columns}"
    if count > MAX_WINDOWS:
        shown += f" (the first {MAX_WINDOWS} shown)"
    size = (
        f"{length:,} chars"
        if complete
        else f"over {MAX_SCAN_LINE_BYTES:,} bytes, searched in its first {length:,}"
        " chars"
    )
    return (
        "".join(parts) + f" [line cut: {size}; {shown}; read {rel} with"
        f" offset={number} column={windows[0][0] + 1} to see it from there]"
    )


def context_line(text: str, *, rel: str, number: int, complete: bool = True) -> str:
    """A context line: whole, or its first `MAX_LINE_CHARS` characters and a marker.

    `complete` as for `match_line`.
    """
    if complete and len(text) <= MAX_LINE_CHARS:
        return text
    size = f"{len(text):,} chars" if complete else f"over {MAX_SCAN_LINE_BYTES:,} bytes"
    rest = _gap(len(text) - MAX_LINE_CHARS) if complete else "…"
    return (
        f"{text[:MAX_LINE_CHARS]}{rest} [line cut: {size}; read {rel} with"
        f" offset={number} column={MAX_LINE_CHARS + 1} for the rest]"
    )
