"""The `read` tool: a file's lines with numbers, or an image; knows what was read before."""

from __future__ import annotations

import base64
import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import islice
from pathlib import Path, PurePath
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError, ToolInputError, WorkspaceEscapeError
from ..._native.threads import check_cancelled, run_in_worker_thread
from ...messages import ContentBlock, Image, Text, ToolCall
from .._access import Access, Concurrency, Interrupt, Warrant
from .._context import SessionState, ShownResult, ToolContext, result_digest
from .._tool import Tool
from ._longline import MAX_LINE_CHARS, Line, LineReader, shown_line
from ._readstate import fingerprint, record_read, still_shown
from ._textfile import (
    SNIFF_BYTES,
    describe_os_error,
    image_type,
    is_binary,
    number_lines,
    open_regular,
    reporting_os_errors,
    unicode_bom,
)
from ._workspace import Workspace

__all__ = ["DEFAULT_CHAR_LIMIT", "ReadTool"]

_NUMBER_WIDTH = 8
"""Characters `number_lines` adds to a line: a 6-wide number, a tab, a newline."""

DEFAULT_LINE_LIMIT = 2000
"""Lines shown when the call gives no `limit`."""

DEFAULT_CHAR_LIMIT = 40_000
"""Characters of numbered text one read shows at most; the rest is paged.

`read` is exempt from large-result persistence (``max_result_chars=None``):
saving a file's content to another file the model would then have to read
helps no one. It pages instead, and its closing line says where to go on.
"""

_HINT_NAMES = 10_000
"""Sibling names a "did you mean" hint looks at, at most."""

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
    column: int = Field(
        1,
        ge=1,
        description=f"1-based character column the first line (line `offset`) starts"
        f" at. A line over {MAX_LINE_CHARS:,} characters is cut, and its marker"
        " gives the offset and column that read on; later lines start at column 1.",
    )


@dataclass(frozen=True, slots=True)
class _Window:
    lines: list[str]
    more: bool
    total_seen: int
    full: bool = False
    """True if the character cap (not the line limit) ended the window."""
    invalid: bool = False
    """True if a shown line held bytes that are not UTF-8 (shown as U+FFFD)."""


class ReadTool(Tool):
    """Read a text file (numbered lines, a window by offset/limit) or an image.

    SAFE; access: reads ``fs:<resolved path>``. Interrupt: BLOCK (as
    in Claude Code, whose ReadTool is non-interruptible; a read is short and it updates the read
    ledger, which should not be left half-told).

    Paging: one result shows at most `limit` lines (default
    `DEFAULT_LINE_LIMIT`) and at most `max_chars` characters of numbered text
    (default `DEFAULT_CHAR_LIMIT`), whichever ends first; a last line then says
    which lines were shown and the ``offset`` that reads on. Never persisted.

    Saved results: a path inside the session's results directory (where large
    outputs of other tools are saved) may be read too, so a persisted result's
    path can be paged through like any file.

    Read state (v2.1.91/92): the result carries a stale-read hint when the file
    changed on disk since the session last read it, and a re-read of an
    unchanged range returns a short "unchanged" note instead of the same lines
    again (``force=true`` overrides).

    Errors: missing file, a directory, a pipe, device or socket (refused on the
    open descriptor, which is opened non-blocking: a FIFO with no writer cannot
    hang the call), a binary file, UTF-16/32 text, an offset past the end, an
    image over `MAX_IMAGE_BYTES`, a path outside the workspace.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | Workspace,
        *,
        max_chars: int = DEFAULT_CHAR_LIMIT,
    ) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars}")
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The root reads are confined to."""
        self.max_chars = max_chars
        """Characters of numbered text one result shows at most."""
        super().__init__(
            name="read",
            description=(
                "Read a file in the workspace. Text comes back with line numbers "
                "(like `cat -n`); a long file comes back a page at a time, ending "
                "with the offset to read on from; use offset/limit for a window. "
                "A line over 2,000 characters is cut; its marker gives its length "
                "and the offset and column to read on from. "
                "Images (PNG, JPEG, GIF, WebP) come back as images. Binary files "
                "are refused. Reading a range you already read, unchanged, "
                "returns a short note instead of the same lines."
            ),
            input_model=ReadInput,
            concurrency=Concurrency.SAFE,
            access=self._access,
            access_bound=Access(reads=(Workspace.key(self.workspace.root),)),
            interrupt=Interrupt.BLOCK,
            runs_in_thread=True,
            max_result_chars=None,  # pages instead (see DEFAULT_CHAR_LIMIT)
            warrant=Warrant.ENFORCED,  # its own code only reads
        )

    def permission_subject(self, args: dict[str, Any]) -> PurePath:
        """The resolved path, for permission rules of the form ``Name(glob)``."""
        return self.workspace.subject(args["path"])

    def _access(self, args: dict[str, Any]) -> Access:
        return Access(reads=(Workspace.key(self.workspace.resolve(args["path"])),))

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Read on a worker thread; see the class docstring for the result."""
        return await run_in_worker_thread(
            partial(
                reporting_os_errors,
                partial(
                    self.read_sync,
                    args,
                    ctx.state,
                    check=check_cancelled,
                    call=ctx.call,
                ),
                "read",
                args["path"],
            )
        )

    def read_sync(
        self,
        args: dict[str, Any],
        state: SessionState,
        *,
        check: Callable[[], None] | None = None,
        call: ToolCall | None = None,
    ) -> str | tuple[ContentBlock, ...]:
        """The blocking body of `call`.

        `check` is a cancellation check, called now and then while lines are
        scanned (`check_cancelled` on a worker thread): at a deadline the scan
        stops, before anything is recorded in the ledger.
        `call` is the call being answered: the ledger keeps which result showed
        the lines, so a re-read says "unchanged" only while the model still
        sees that result (`SessionState.transcript`).
        """
        path, rel = self._locate(args["path"], state)
        _check_is_file(path, rel, self.workspace)
        try:
            with open_regular(path, rel) as stream:
                return self._read_open(stream, args, rel, state, path, check, call)
        except OSError as exc:  # e.g. EIO from a special file that passed as regular
            raise ToolError(f"cannot read {rel}: {describe_os_error(exc)}") from None

    def _read_open(
        self,
        stream: BinaryIO,
        args: dict[str, Any],
        rel: str,
        state: SessionState,
        path: Path,
        check: Callable[[], None] | None,
        call: ToolCall | None,
    ) -> str | tuple[ContentBlock, ...]:
        st = os.fstat(stream.fileno())
        head = stream.read(SNIFF_BYTES)
        media_type = image_type(head)
        if media_type is not None:
            return self._image(stream, st, head, media_type, rel, state, path)
        encoding = unicode_bom(head)
        if encoding is not None:
            raise ToolError(
                f"{rel} is {encoding} text (it starts with a byte-order mark); read"
                " only shows UTF-8 text. Convert it with bash, e.g. `iconv -f "
                f"{encoding} -t UTF-8 {rel}`."
            )
        if is_binary(head):
            raise ToolError(
                f"{rel} is a binary file ({st.st_size} bytes); read only shows "
                "text and images. Use bash (e.g. `xxd`, `file`) to inspect it."
            )
        stream.seek(0)
        window = _window(
            stream,
            args["offset"],
            args["limit"],
            self.max_chars,
            check,
            args.get("column", 1),
        )
        return self._text(window, args, st, rel, state, path, call)

    def _locate(self, given: str, state: SessionState) -> tuple[Path, str]:
        """The resolved path and how results name it: in the workspace, or a saved result.

        Raises:
            WorkspaceEscapeError: outside both the workspace and the results directory.
        """
        try:
            path = self.workspace.resolve(given)
        except WorkspaceEscapeError:
            saved = _in_results_dir(given, state)
            if saved is None:
                raise
            return saved, str(saved)
        return path, self.workspace.relative(path)

    def _text(
        self,
        window: _Window,
        args: dict[str, Any],
        st: os.stat_result,
        rel: str,
        state: SessionState,
        path: Path,
        call: ToolCall | None,
    ) -> str:
        offset = args["offset"]
        if not window.lines and not (offset == 1 and window.total_seen == 0):
            raise ToolInputError(
                f"offset {offset} is past the end of {rel} ({window.total_seen} lines)"
            )
        span = (offset, len(window.lines) if window.more else None)
        prior = state.read_files.get(path)
        stale = prior is not None and (prior.mtime_ns, prior.size) != fingerprint(st)
        fresh = (
            prior is not None
            and not stale
            and not args["force"]
            and args.get("column", 1) == 1  # the rest of a long line is news
        )
        if fresh and prior is not None and still_shown(state, prior, span):
            return _unchanged_note(rel, offset, window)
        body = number_lines(window.lines, offset) if window.lines else "(empty file)"
        if window.more:
            last = offset + len(window.lines) - 1
            why = (
                f"; this read's {self.max_chars:,}-character page is full"
                if window.full
                else ""
            )
            body += (
                f"\n\n[showing lines {offset}-{last}{why}; the file continues: "
                f"read with offset={last + 1} for more]"
            )
        if window.invalid:
            body = (
                f"[note: {rel} is not valid UTF-8 text: bytes that do not decode are "
                "shown as \ufffd (U+FFFD), and edit refuses the file]\n" + body
            )
        if stale:
            body = (
                f"[note: {rel} changed on disk since your last read; this is its "
                "current content]\n" + body
            )
        shown = (
            None
            if call is None
            else ShownResult(span, len(body), result_digest(call, body))
        )
        record_read(state, path, st, span, shown)
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
        # st_size can lie (0 for a /proc file): the read itself is bounded too
        data = head + stream.read(MAX_IMAGE_BYTES + 1 - len(head))
        if len(data) > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{rel} is an image of over {MAX_IMAGE_BYTES} bytes, the limit for read"
            )
        record_read(state, path, st, (1, None))
        return (
            Text(f"Image {rel} ({media_type}, {len(data)} bytes)"),
            Image(base64.b64encode(data).decode("ascii"), media_type),
        )


def _check_is_file(path: Path, rel: str, workspace: Workspace) -> None:
    """Refuse a directory, and a missing file with a did-you-mean hint.

    Only for the message: what may be read is decided by `open_regular` on the
    open descriptor, which also refuses pipes and devices without blocking.
    """
    if path.is_dir():
        raise ToolInputError(f"{rel} is a directory; use glob to list its files")
    if os.path.lexists(path):
        return
    hint = ""
    try:  # a bounded look at the siblings: a huge directory must not stall the call
        names = [p.name for p in islice(path.parent.iterdir(), _HINT_NAMES)]
    except OSError:
        names = []
    if names:
        close = difflib.get_close_matches(path.name, names, n=3)
        if close:
            parent = workspace.relative(path.parent)
            shown = ", ".join(n if parent == "." else f"{parent}/{n}" for n in close)
            hint = f" Did you mean: {shown}?"
    raise ToolError(f"File not found: {rel}.{hint}")


def _in_results_dir(given: str, state: SessionState) -> Path | None:
    """`given` resolved, if it lies inside the session's results directory."""
    root = state.results_dir
    if root is None or not Path(given).is_absolute():
        return None
    try:
        resolved, base = Path(given).resolve(), root.resolve()
    except (OSError, RuntimeError):
        return None
    return resolved if resolved.is_relative_to(base) else None


def _window(
    stream: BinaryIO,
    offset: int,
    limit: int | None,
    max_chars: int,
    check: Callable[[], None] | None = None,
    column: int = 1,
) -> _Window:
    """Lines from `offset` (the first from `column`): at most `limit`, about `max_chars`.

    The first line is always shown (a long line is cut at `MAX_LINE_CHARS`,
    saying how to read on), so a page never comes back empty. Lines before
    `offset` are skipped undecoded.

    Raises:
        ToolInputError: `column` is past the end of line `offset`.
    """
    want = limit if limit is not None else DEFAULT_LINE_LIMIT
    reader = LineReader(stream, check)
    lines: list[str] = []
    seen = used = 0
    invalid = False
    while seen + 1 < offset:
        if not reader.skip():
            return _Window(lines, False, seen)
        seen += 1
    while True:
        if len(lines) == want:
            return _Window(lines, not reader.at_end(), seen, invalid=invalid)
        line = reader.next(start=column - 1 if not lines else 0)
        if line is None:
            return _Window(lines, False, seen, invalid=invalid)
        seen += 1
        if not lines and column > 1:
            _check_column(line, offset, column)
        shown = shown_line(line, seen)
        cost = len(shown) + _NUMBER_WIDTH
        if lines and used + cost > max_chars:
            return _Window(lines, True, seen, full=True, invalid=invalid)
        lines.append(shown)
        used += cost
        invalid = invalid or line.invalid


def _check_column(line: Line, number: int, column: int) -> None:
    if line.length is not None and column > line.length:
        raise ToolInputError(
            f"column {column} is past the end of line {number}, which has"
            f" {line.length:,} characters"
        )


def _unchanged_note(rel: str, offset: int, window: _Window) -> str:
    if not window.lines:
        return f"[{rel} is unchanged since your last read: it is still empty.]"
    last = offset + len(window.lines) - 1
    return (
        f"[{rel} lines {offset}-{last} are unchanged since your last read; "
        "that earlier result is still current. Pass force=true to see them again.]"
    )
