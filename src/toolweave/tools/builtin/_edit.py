"""The `edit` and `write` tools: change files the session has read, atomically."""

from __future__ import annotations

import os
import stat
from functools import partial
from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError, ToolInputError
from ..._native.threads import run_in_worker_thread
from .._access import Access, Concurrency, Interrupt
from .._context import SessionState, ToolContext
from .._tool import PermissionCheck, Tool
from ._longline import MAX_LINE_CHARS, Line, shown_line
from ._readstate import record_write, require_fresh_read
from ._textfile import (
    SNIFF_BYTES,
    atomic_write,
    describe_os_error,
    is_binary,
    number_lines,
    open_regular,
    reporting_os_errors,
    unicode_bom,
)
from ._workspace import Workspace

__all__ = ["MAX_EDIT_BYTES", "EditTool", "WriteTool"]

SNIPPET_CONTEXT = 3
"""Lines shown around the first replacement in an edit's result."""

SNIPPET_MAX_LINES = 40
"""Lines an edit's snippet shows at most (a huge new_string is not echoed whole)."""

_BEFORE_EDIT = 80
"""Characters shown before the replacement, in a long line the snippet cuts."""

MAX_EDIT_BYTES = 16 * 1024 * 1024
"""Larger files are refused by edit: it holds the file in memory (several copies
while replacing), so memory stays bounded whatever file the model points it at."""


class EditInput(BaseModel):
    """Input of `edit`."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File to change, relative to the workspace root.")
    old_string: str = Field(min_length=1, description="Exact text to replace.")
    new_string: str = Field(description="Text to put in its place.")
    replace_all: bool = Field(False, description="Replace every occurrence.")


class WriteInput(BaseModel):
    """Input of `write`."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="File to create or overwrite, relative to the root.")
    content: str = Field(description="The complete new content of the file.")


class _FileChangeTool(Tool):
    """What edit and write share: confinement, declarations, the read guard."""

    def __init__(
        self, root: str | os.PathLike[str] | Workspace, **options: Any
    ) -> None:
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The root changes are confined to."""
        super().__init__(
            concurrency=Concurrency.SEQUENTIAL,
            access=self._access,
            access_bound=Access(writes=(Workspace.key(self.workspace.root),)),
            interrupt=Interrupt.BLOCK,
            runs_in_thread=True,
            **options,
        )

    def permission_subject(self, args: dict[str, Any]) -> PurePath:
        """The resolved path, for permission rules of the form ``Name(glob)``."""
        return self.workspace.subject(args["path"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        """Ask before changing a file (approved in advance by ``accept_edits``).

        The suggested rule names the file relative to the workspace root.
        """
        del ctx
        rel = self.workspace.relative(self.workspace.resolve(args["path"]))
        return PermissionCheck(
            "ask", f"{self.name} changes {rel}", rules=(f"{self.name}(./{rel})",)
        )

    def _access(self, args: dict[str, Any]) -> Access:
        return Access(writes=(Workspace.key(self.workspace.resolve(args["path"])),))


class EditTool(_FileChangeTool):
    """Replace an exact string in a file the session has read.

    SEQUENTIAL; access: writes ``fs:<resolved file>``. Interrupt: BLOCK (a
    change is written whole or not at all, by one rename).

    Refuses, with an error that says what to do: a file not read in this
    session or changed on disk since, a missing file, a
    binary file, `old_string` not found, or found more than once without
    `replace_all`. After the change the session knows the new content, so a
    following edit needs no re-read.
    """

    def __init__(self, root: str | os.PathLike[str] | Workspace) -> None:
        super().__init__(
            root,
            name="edit",
            description=(
                "Replace exact text in a file you have read in this session. "
                "old_string must match the file exactly (including indentation) "
                "and be unique unless replace_all is true; include surrounding "
                "lines to make it unique. Use write to create new files."
            ),
            input_model=EditInput,
        )

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Edit on a worker thread; returns a summary with a numbered snippet."""
        return await run_in_worker_thread(
            partial(
                reporting_os_errors,
                partial(self.edit_sync, args, ctx.state),
                "edit",
                args["path"],
            )
        )

    def edit_sync(self, args: dict[str, Any], state: SessionState) -> str:
        """The blocking body of `call`."""
        old, new = args["old_string"], args["new_string"]
        if old == new:
            raise ToolInputError(
                "old_string and new_string are the same; nothing to do"
            )
        path = self.workspace.resolve(args["path"])
        rel = self.workspace.relative(path)
        text = _read_for_change(path, rel, state)
        old, new = _match_line_endings(text, old, new)
        count = text.count(old)
        if count == 0:
            raise ToolError(
                f"old_string was not found in {rel}. It must match the file "
                "exactly, including whitespace and indentation; read the file "
                "again to copy the text."
            )
        if count > 1 and not args["replace_all"]:
            raise ToolError(
                f"old_string matches {count} places in {rel}. Add surrounding "
                "lines to old_string so it matches exactly one place, or pass "
                "replace_all=true to change all of them."
            )
        first = text.index(old)
        updated = (
            text.replace(old, new) if args["replace_all"] else text.replace(old, new, 1)
        )
        _write(path, rel, _utf8(updated, "new_string"))
        record_write(state, path)
        done = count if args["replace_all"] else 1
        plural = "s" if done > 1 else ""
        return f"Edited {rel}: replaced {done} occurrence{plural}.\n" + _snippet(
            updated, first, new
        )


class WriteTool(_FileChangeTool):
    """Create a file, or overwrite one the session has read.

    SEQUENTIAL; access: writes ``fs:<resolved file>``, or, when directories
    must be created for it, ``fs:<the topmost missing one>`` (which covers the
    file). Interrupt: BLOCK.
    A new file needs no prior read (missing parent directories are created);
    an existing one must have been read in this session and be unchanged on
    disk since. The write is atomic (temp file + rename) and keeps the mode.
    """

    def __init__(self, root: str | os.PathLike[str] | Workspace) -> None:
        super().__init__(
            root,
            name="write",
            description=(
                "Write a file with the given complete content. Creates it (and "
                "its directories) if missing; an existing file must have been "
                "read in this session first. Prefer edit for small changes."
            ),
            input_model=WriteInput,
        )

    def _access(self, args: dict[str, Any]) -> Access:
        top = self.workspace.resolve(args["path"])
        while not top.parent.exists() and top.parent != top:
            top = top.parent  # a directory this call will create
        return Access(writes=(Workspace.key(top),))

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Write on a worker thread; returns a one-line summary."""
        return await run_in_worker_thread(
            partial(
                reporting_os_errors,
                partial(self.write_sync, args, ctx.state),
                "write",
                args["path"],
            )
        )

    def write_sync(self, args: dict[str, Any], state: SessionState) -> str:
        """The blocking body of `call`."""
        path = self.workspace.resolve(args["path"])
        rel = self.workspace.relative(path)
        if path.is_dir():
            raise ToolInputError(f"{rel} is a directory")
        existed = os.path.lexists(path)
        if existed:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(
                    f"{rel} exists and is not a regular file (a pipe, socket or "
                    "device); write only creates or replaces regular files"
                )
            require_fresh_read(state, path, st, rel)
        elif not path.parent.is_dir():
            _make_parents(path, rel, self.workspace)
        data = _utf8(args["content"], "content")
        _write(path, rel, data)
        record_write(state, path)
        verb = "Overwrote" if existed else "Created"
        return f"{verb} {rel} ({len(data)} bytes)."


def _make_parents(path: Path, rel: str, workspace: Workspace) -> None:
    """Create the missing directories above `path`, or say which file is in the way."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = path.parent
        while not os.path.lexists(blocker):
            blocker = blocker.parent
        raise ToolError(
            f"cannot create {rel}: {workspace.relative(blocker)} is a file, not a "
            "directory"
        ) from None
    except OSError as exc:
        raise ToolError(
            f"cannot create the directories for {rel}: {describe_os_error(exc)}"
        ) from None


def _write(path: Path, rel: str, data: bytes) -> None:
    """`atomic_write`, with an OS refusal turned into a clear error result."""
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise ToolError(f"cannot write {rel}: {describe_os_error(exc)}") from None


def _read_for_change(path: Path, rel: str, state: SessionState) -> str:
    """The text of a file the session may change; nothing is read before it may.

    The read guard and the size limit are checked on the open descriptor
    before the content is read, so a 200 MB file costs one ``fstat``, and the
    read itself is bounded (a file that grows meanwhile is still refused).
    `open_regular` refuses pipes and devices without blocking.
    """
    if path.is_dir():
        raise ToolInputError(f"{rel} is a directory")
    if not os.path.lexists(path):
        raise ToolError(f"File not found: {rel}. Use write to create a new file.")
    too_big = ToolError(
        f"{rel} is over the {MAX_EDIT_BYTES:,}-byte limit of edit (it holds the "
        "file in memory); change it with bash (e.g. sed) instead"
    )
    try:
        with open_regular(path, rel) as stream:
            st = os.fstat(stream.fileno())
            require_fresh_read(state, path, st, rel)
            if st.st_size > MAX_EDIT_BYTES:
                raise too_big
            data = stream.read(MAX_EDIT_BYTES + 1)
    except OSError as exc:
        raise ToolError(f"cannot read {rel}: {describe_os_error(exc)}") from None
    if len(data) > MAX_EDIT_BYTES:
        raise too_big
    encoding = unicode_bom(data)
    if encoding is not None:
        raise ToolError(f"{rel} is {encoding} text; edit only changes UTF-8 text files")
    if is_binary(data[:SNIFF_BYTES]):
        raise ToolError(f"{rel} is a binary file; edit only changes text files")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{rel} is not valid UTF-8 text ({exc.reason})") from exc


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """`old` and `new` with the line ends `old` occurs with in `text`.

    read shows lines without their carriage returns, so a multi-line old_string
    copied from a CRLF file holds plain line feeds and would never match (and a
    model may send CRLF against an LF file). When `old` does not match as given
    but does with the other line ends, both strings are used with those, so the
    file keeps its line endings. Otherwise they are unchanged.
    """
    if "\n" not in old or old in text:
        return old, new

    def lf(s: str) -> str:
        return s.replace("\r\n", "\n")

    def crlf(s: str) -> str:
        return lf(s).replace("\n", "\r\n")

    for convert in (crlf, lf):
        if convert(old) in text:
            return convert(old), convert(new)
    return old, new


def _utf8(text: str, what: str) -> bytes:
    """`text` as UTF-8, or an input error naming the character that has no encoding.

    JSON lets a model escape a lone surrogate (U+D800 to U+DFFF); UTF-8 has no form
    for it, and writing a replacement instead would silently change the content.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolInputError(
            f"{what} holds {text[exc.start]!r} at position {exc.start}, a lone "
            "surrogate that cannot be written as UTF-8; send the intended character"
        ) from None


def _snippet(text: str, start: int, inserted: str) -> str:
    """Numbered lines around the replacement at `start`: bounded in lines and width.

    A line over `MAX_LINE_CHARS` is cut as `read` cuts it (`shown_line`: its
    real length, the columns shown, the `read` call for more); the line the
    replacement starts in is shown from a little before the replacement, so
    an edit deep in a minified line shows the edit, not the line's start.
    """
    first_line = text.count("\n", 0, start)
    last_line = first_line + inserted.count("\n")
    column = start - (text.rfind("\n", 0, start) + 1)
    lines = text.split("\n")
    lo = max(0, first_line - SNIPPET_CONTEXT)
    hi = min(len(lines), last_line + SNIPPET_CONTEXT + 1, lo + SNIPPET_MAX_LINES)
    shown = []
    for index in range(lo, hi):
        line = lines[index].removesuffix("\r")
        begin = 0
        if index == first_line and len(line) > MAX_LINE_CHARS:
            begin = max(0, min(column - _BEFORE_EDIT, len(line) - MAX_LINE_CHARS))
        kept = Line(line[begin : begin + MAX_LINE_CHARS], begin, len(line))
        shown.append(shown_line(kept, index + 1))
    return number_lines(shown, lo + 1)
