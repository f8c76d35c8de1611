"""The `glob` tool: find files by name pattern under the workspace."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError
from ..._native.threads import check_cancelled, run_in_worker_thread
from .._access import Access, Concurrency, Interrupt, Warrant
from .._context import ToolContext
from .._tool import Tool
from ._textfile import describe_os_error, reporting_os_errors
from ._walk import compile_glob, walk_files
from ._workspace import Workspace

__all__ = ["GlobTool"]

MAX_GLOB_RESULTS = 200
"""More matches than this are counted, not listed."""


class GlobInput(BaseModel):
    """Input of `glob`."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        description="Glob such as '**/*.py' or 'src/*.{ts,tsx}'; without '/' it "
        "matches file names at any depth.",
    )
    path: str = Field(".", description="Directory to search, relative to the root.")


class GlobTool(Tool):
    """List the files under a directory whose path matches a glob, sorted by path.

    SAFE; access: reads ``fs:<resolved directory>`` (which covers every file
    under it). Interrupt: CANCEL, cooperatively: the walk checks for
    cancellation at each directory, so an interrupted call stops promptly.
    """

    def __init__(self, root: str | os.PathLike[str] | Workspace) -> None:
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The root searches are confined to."""
        super().__init__(
            name="glob",
            description=(
                "Find files by glob pattern under a directory of the workspace "
                "(default: the root). Returns paths relative to the root, sorted. "
                "'*' stays within a directory, '**' crosses directories; a pattern "
                "without '/' matches file names at any depth. .git is skipped."
            ),
            input_model=GlobInput,
            concurrency=Concurrency.SAFE,
            access=self._access,
            access_bound=Access(reads=(Workspace.key(self.workspace.root),)),
            interrupt=Interrupt.CANCEL,
            # The walk runs on a worker thread but checks for cancellation at
            # each directory, so a cancel does stop it: the gate may overlap it.
            runs_in_thread=False,
            warrant=Warrant.ENFORCED,  # its own code only lists
        )

    def permission_subject(self, args: dict[str, Any]) -> PurePath:
        """The resolved path, for permission rules of the form ``Name(glob)``."""
        return self.workspace.subject(args["path"])

    def _access(self, args: dict[str, Any]) -> Access:
        return Access(reads=(Workspace.key(self.workspace.resolve(args["path"])),))

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Walk on a worker thread; returns one relative path per line."""
        del ctx
        return await run_in_worker_thread(
            partial(
                reporting_os_errors, partial(self.glob_sync, args), "glob", args["path"]
            )
        )

    def glob_sync(self, args: dict[str, Any]) -> str:
        """The blocking body of `call` (runs on a worker thread: `run_in_worker_thread`).

        A directory that cannot be listed is counted and named in the result
        (never silently left out); a name holding a control character (a
        newline would split it into two result lines) is shown JSON-quoted.
        """
        start = self.workspace.resolve(args["path"])
        if not start.is_dir():
            what = "does not exist" if not start.exists() else "is not a directory"
            raise ToolError(f"{self.workspace.relative(start)} {what}")
        matches = compile_glob(args["pattern"])
        found: list[str] = []
        unlisted: list[tuple[Path, OSError]] = []
        total = 0
        for path in walk_files(
            self.workspace,
            start,
            check_cancelled,
            lambda where, exc: unlisted.append((where, exc)),
        ):
            if matches(path.relative_to(start).as_posix()):
                total += 1
                if len(found) < MAX_GLOB_RESULTS:
                    found.append(_shown_name(self.workspace.relative(path)))
        pattern = _shown_pattern(args["pattern"])
        text = (
            "\n".join(found)
            if found
            else f"No files match {pattern} under {args['path'][:200]}"
        )
        if total > len(found):
            text += (
                f"\n[{total - len(found)} more matches not shown; "
                "narrow the pattern or the path]"
            )
        if unlisted:
            where, exc = unlisted[0]
            text += (
                f"\n[{len(unlisted)} director{'y' if len(unlisted) == 1 else 'ies'}"
                " could not be listed and were not searched, e.g. "
                f"{_shown_name(self.workspace.relative(where))[:200]}: "
                f"{describe_os_error(exc)}]"
            )
        return text


def _shown_name(rel: str) -> str:
    """`rel` as a result line: JSON-quoted if it holds a control character."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in rel):
        return json.dumps(rel)
    return rel


def _shown_pattern(text: str) -> str:
    """A pattern or path echoed in a message: quoted, and cut if long."""
    return repr(text) if len(text) <= 200 else f"{text[:200]!r}…"
