"""Large-result persistence: previews, files under tool-results/, sticky replacements."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

__all__ = [
    "ReplacementLedger",
    "make_preview",
    "persisted_notice",
    "replacement_text",
    "result_path",
    "save_result",
    "truncated_notice",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def make_preview(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, cut at a line end if one is near.

    The cut is the last newline that leaves between 50 % and 100 % of `limit`
    (as in Claude Code), so the preview does not end mid-line; with no newline
    in that window it is cut at exactly `limit`.
    """
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", limit // 2, limit + 1)
    return text[:cut] if cut != -1 else text[:limit]


def _safe(name: str) -> str:
    safe = _UNSAFE.sub("_", name).lstrip(".") or "_"
    if safe != name:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        safe = f"{safe}-{digest}"
    return safe


def result_path(results_dir: Path, call_id: str, key: str = "") -> Path:
    """Where the full output of a call is saved: ``tool-results/<id>@<key>.txt``.

    `key` is the call's `ToolCall.key` (its position in the run): models repeat
    ids, so a name from the id alone would go to whichever call finished first,
    and a parallel batch would name its files differently from a serial one.
    Without a key (a call made outside the agent loop) the name is
    ``<id>.txt``. Characters outside ``[A-Za-z0-9_.-]`` are replaced and a
    short hash added, so an odd id can neither escape the directory nor
    collide with another.
    """
    name = (
        _safe(call_id)
        if not key or key == call_id
        else f"{_safe(call_id)}@{_safe(key)}"
    )
    return results_dir / "tool-results" / f"{name}.txt"


def save_result(results_dir: Path, call_id: str, text: str, key: str = "") -> Path:
    """Save `text` under a path of its own and return it. Blocking I/O.

    The name comes from `call_id` and `key` (`result_path`); when that file
    exists (an earlier run of the session numbered its calls alike, or a call
    outside the loop repeated an id) the first free ``<name>-2.txt``, ``-3`` …
    is taken. The name is reserved exclusively, so no saved output is ever
    overwritten by a later call's, even from another process sharing the
    directory.

    Atomic: the text is written to a temporary file beside it and renamed over
    the reservation once complete, so the path holds the whole output or
    nothing. A write that fails (a full disk) removes both, leaving no partial
    file at the path a notice could name.

    Raises:
        OSError: if the file cannot be written.
    """
    first = result_path(results_dir, call_id, key)
    first.parent.mkdir(parents=True, exist_ok=True)
    path, n = first, 1
    while True:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            n += 1
            path = first.with_name(f"{first.stem}-{n}.txt")
            continue
        break
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        for leftover in (tmp, path):
            with contextlib.suppress(OSError):
                leftover.unlink()
        raise
    return path


def persisted_notice(path: Path, text: str, preview_chars: int) -> str:
    """What the model sees instead of a persisted result: size, path, preview."""
    preview = make_preview(text, preview_chars)
    return (
        f"<persisted-output>\nOutput too large ({len(text):,} characters)."
        f" Full output saved to: {path}\n\n"
        f"Preview (first {len(preview):,} characters):\n{preview}\n...\n"
        "</persisted-output>"
    )


def truncated_notice(text: str, preview_chars: int, why: str) -> str:
    """What the model sees when a large result could not be saved: a preview."""
    preview = make_preview(text, preview_chars)
    return (
        f"<truncated-output>\nOutput too large ({len(text):,} characters) and {why};"
        f" only the first {len(preview):,} characters are shown.\n\n"
        f"{preview}\n...\n</truncated-output>"
    )


def replacement_text(
    results_dir: Path | None,
    call_id: str,
    text: str,
    preview_chars: int,
    key: str = "",
) -> tuple[str, bool]:
    """Save `text` and return ``(replacement, saved)``. Blocking I/O; never raises.

    Without a results directory, or when the write fails, the replacement is a
    truncated preview that says why the rest is missing.
    """
    if results_dir is None:
        why = "no results directory is configured"
        return truncated_notice(text, preview_chars, why), False
    try:
        path = save_result(results_dir, call_id, text, key)
    except OSError as exc:
        folder = result_path(results_dir, call_id, key).parent  # no file left there
        why = f"saving it to {folder} failed ({exc})"
        return truncated_notice(text, preview_chars, why), False
    return persisted_notice(path, text, preview_chars), True


class ReplacementLedger:
    """call key → the text that replaced its result, for as long as the session lives.

    Keyed by `ToolCall.ref` (the call's position key when the loop set one), never
    by the provider's id alone: models repeat ids, and a later call must not be
    shown an earlier call's preview.

    Sticky (as in Claude Code): once a result was replaced, every later request
    shows the same text, so the prompt prefix (and its cache) never changes.
    Used only from the event-loop thread; not locked.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def get(self, call_id: str) -> str | None:
        """The replacement of `call_id`, or None if its result was not replaced."""
        return self._texts.get(call_id)

    def record(self, call_id: str, text: str) -> None:
        """Remember that `call_id`'s result is `text` from now on."""
        self._texts[call_id] = text

    def discard(self, call_id: str) -> None:
        """Forget `call_id` (its output was replaced by a hook before anyone saw it)."""
        self._texts.pop(call_id, None)

    def view(self) -> Mapping[str, str]:
        """A read-only live view of every replacement."""
        return MappingProxyType(self._texts)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._texts

    def __len__(self) -> int:
        return len(self._texts)
