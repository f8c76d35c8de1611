"""The `read` tool: a file's lines with numbers, or an image; knows what was read before."""

from __future__ import annotations

import base64
import difflib
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePath
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError, ToolInputError
from ...messages import ContentBlock, Image, Text
from .._access import Access, Concurrency, Interrupt
from .._context import SessionState, ToolContext
from .._threads import run_in_worker_thread
from .._tool import Tool
from ._readstate import fingerprint, record_read, span_covered
from ._textfile import SNIFF_BYTES, image_type, is_binary, iter_lines, number_lines
from ._workspace import Workspace

__all__ = ["ReadTool"]

DEFAULT_LINE_LIMIT = 2000
"""Lines shown when the call gives no `limit`."""

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Larger images are refused rather than sent to the model."""


class ReadInput(BaseModel):
    """Input of `read`."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File to read, relative to the workspace root.")
    offset: int = Field(1, ge=1, description="1-based line number to start from.")
    limit: int | None = Field(
        None,
        ge=1,
        description=f"Number of lines to show (default {DEFAULT_LINE_LIMIT}).",
    )
    force: bool = Field(
        False,
        description="Show the content even if it is unchanged since your last read.",
    )


@dataclass(frozen=True, slots=True)
class _Window:
    lines: list[str]
    more: bool
    total_seen: int


class ReadTool(Tool):
    """Read a text file (numbered lines, a window by offset/limit) or an image.

    SAFE; access: reads ``fs:<resolved path>``. Interrupt: BLOCK (seed 000 §6:
    ReadTool is non-interruptible; a read is short and it updates the read
    ledger, which should not be left half-told).

    Read state (v2.1.91/92): the result carries a stale-read hint when the file
    changed on disk since the session last read it, and a re-read of an
    unchanged range returns a short "unchanged" note instead of the same lines
    again (``force=true`` overrides).

    Errors: missing file, a directory, a binary file, an offset past the end, an
    image over `MAX_IMAGE_BYTES`, a path outside the workspace.
    """

    def __init__(self, root: str | os.PathLike[str] | Workspace) -> None:
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The root reads are confined to."""
        super().__init__(
            name="read",
            description=(
                "Read a file in the workspace. Text comes back with line numbers "
                "(like `cat -n`); use offset/limit for a window of a long file. "
                "Images (PNG, JPEG, GIF, WebP) come back as images. Binary files "
                "are refused. Reading a range you already read, unchanged, "
                "returns a short note instead of the same lines."
            ),
            input_model=ReadInput,
            concurrency=Concurrency.SAFE,
            access=self._access,
            interrupt=Interrupt.BLOCK,
            runs_in_thread=True,
        )

    def permission_subject(self, args: dict[str, Any]) -> PurePath:
        """The resolved path, for permission rules of the form ``Name(glob)``."""
        return self.workspace.subject(args["path"])

    def _access(self, args: dict[str, Any]) -> Access:
        return Access(reads=(Workspace.key(self.workspace.resolve(args["path"])),))

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Read on a worker thread; see the class docstring for the result."""
        return await run_in_worker_thread(partial(self.read_sync, args, ctx.state))

    def read_sync(
        self, args: dict[str, Any], state: SessionState
    ) -> str | tuple[ContentBlock, ...]:
        """The blocking body of `call`."""
        path = self.workspace.resolve(args["path"])
        rel = self.workspace.relative(path)
        _check_is_file(path, rel, self.workspace)
        with path.open("rb") as stream:
            st = os.fstat(stream.fileno())
            head = stream.read(SNIFF_BYTES)
            media_type = image_type(head)
            if media_type is not None:
                return self._image(stream, st, head, media_type, rel, state, path)
            if is_binary(head):
                raise ToolError(
                    f"{rel} is a binary file ({st.st_size} bytes); read only shows "
                    "text and images. Use bash (e.g. `xxd`, `file`) to inspect it."
                )
            stream.seek(0)
            window = _window(stream, args["offset"], args["limit"])
        return self._text(window, args, st, rel, state, path)

    def _text(
        self,
        window: _Window,
        args: dict[str, Any],
        st: os.stat_result,
        rel: str,
        state: SessionState,
        path: Path,
    ) -> str:
        offset = args["offset"]
        if not window.lines and not (offset == 1 and window.total_seen == 0):
            raise ToolInputError(
                f"offset {offset} is past the end of {rel} ({window.total_seen} lines)"
            )
        span = (offset, len(window.lines) if window.more else None)
        prior = state.read_files.get(path)
        stale = prior is not None and (prior.mtime_ns, prior.size) != fingerprint(st)
        fresh = prior is not None and not stale and not args["force"]
        if fresh and prior is not None and span_covered(span, prior.ranges):
            return _unchanged_note(rel, offset, window)
        record_read(state, path, st, span)
        body = number_lines(window.lines, offset) if window.lines else "(empty file)"
        if window.more:
            last = offset + len(window.lines) - 1
            body += (
                f"\n\n[showing lines {offset}-{last}; the file continues: "
                f"read with offset={last + 1} for more]"
            )
        if stale:
            body = (
                f"[note: {rel} changed on disk since your last read; this is its "
                "current content]\n" + body
            )
        return body

    def _image(
        self,
        stream: BinaryIO,
        st: os.stat_result,
        head: bytes,
        media_type: str,
        rel: str,
        state: SessionState,
        path: Path,
    ) -> tuple[ContentBlock, ...]:
        if st.st_size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{rel} is an image of {st.st_size} bytes, over the "
                f"{MAX_IMAGE_BYTES}-byte limit for read"
            )
        data = head + stream.read()
        record_read(state, path, st, (1, None))
        return (
            Text(f"Image {rel} ({media_type}, {len(data)} bytes)"),
            Image(base64.b64encode(data).decode("ascii"), media_type),
        )


def _check_is_file(path: Path, rel: str, workspace: Workspace) -> None:
    if path.is_dir():
        raise ToolInputError(f"{rel} is a directory; use glob to list its files")
    if path.exists():
        if not path.is_file():
            raise ToolError(f"{rel} is not a regular file (a pipe, socket or device)")
        return
    hint = ""
    if path.parent.is_dir():
        names = [p.name for p in path.parent.iterdir()]
        close = difflib.get_close_matches(path.name, names, n=3)
        if close:
            parent = workspace.relative(path.parent)
            shown = ", ".join(n if parent == "." else f"{parent}/{n}" for n in close)
            hint = f" Did you mean: {shown}?"
    raise ToolError(f"File not found: {rel}.{hint}")


def _window(stream: BinaryIO, offset: int, limit: int | None) -> _Window:
    want = limit if limit is not None else DEFAULT_LINE_LIMIT
    lines: list[str] = []
    seen = 0
    for line in iter_lines(stream):
        seen += 1
        if seen < offset:
            continue
        if len(lines) == want:
            return _Window(lines, more=True, total_seen=seen)
        lines.append(line)
    return _Window(lines, more=False, total_seen=seen)


def _unchanged_note(rel: str, offset: int, window: _Window) -> str:
    if not window.lines:
        return f"[{rel} is unchanged since your last read: it is still empty.]"
    last = offset + len(window.lines) - 1
    return (
        f"[{rel} lines {offset}-{last} are unchanged since your last read; "
        "that earlier result is still current. Pass force=true to see them again.]"
    )
