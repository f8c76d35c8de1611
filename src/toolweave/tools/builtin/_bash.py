"""The `bash` tool: one shell command in the workspace, declared by what it can touch."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolError, ToolInputError, ToolTimeoutError
from .._access import Access, Concurrency, Interrupt
from .._context import ToolContext
from .._tool import Tool
from ._bash_classifier import classify_bash, last_command_name
from ._bash_process import ShellOutcome, run_shell
from ._readstate import changed_read_files, read_fingerprints
from ._workspace import Workspace

__all__ = ["BashTool"]

DEFAULT_TIMEOUT = 120.0
"""Seconds a command may run when the call gives no timeout."""

MAX_TIMEOUT = 600.0
"""The longest timeout a call may ask for."""

DEFAULT_MAX_OUTPUT_BYTES = 1_000_000
"""Output kept per call: the first and last halves, with a marker between.

Large on purpose: output over the tool's `max_result_chars` is saved whole to
the session's results directory by the lifecycle and the model gets a preview
and the file's path, so this cap only bounds memory, not what the model sees.
"""

_EXIT_1_IS_AN_ANSWER = frozenset(
    {"grep", "egrep", "fgrep", "rg", "diff", "cmp", "test", "["}
)
"""Commands whose exit status 1 means "no" (no match, files differ), not failure."""

_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",  # read-only git never takes index.lock (parallel-safe)
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}


class BashInput(BaseModel):
    """Input of `bash`."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The bash command to run.")
    timeout: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
    )


class BashTool(Tool):
    """Run a bash command with the workspace root as working directory.

    Concurrency comes from the command: SAFE only when `classify_bash` proves
    it read-only (then access reads ``fs:<root>`` and ``proc:bash``), else SEQUENTIAL with
    undeclared access — a barrier (seed 003 §4.2.2). Interrupt: CANCEL; the
    process group is killed. A failing command aborts running sibling bash
    calls (seed 003 §4.5.3).

    Each call is a fresh ``bash -c`` in a new session: stdin is /dev/null,
    stdout and stderr are interleaved and capped, and the whole process group
    is killed when the shell exits or the timeout passes. A non-zero exit is an
    error result (except exit 1 of grep/diff/test-like commands, which is an
    answer). If the command changed files the session had read, the result says
    which, so the model re-reads before editing them (v2.1.91 stale hint).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | Workspace,
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The working directory of every command."""
        self.max_output_bytes = max_output_bytes
        """Output kept per call."""
        self.env = {**(os.environ if env is None else env), **_ENV}
        """The environment commands run with."""
        super().__init__(
            name="bash",
            description=(
                "Run a bash command in the workspace root and return its output "
                "(stdout and stderr together) and exit code. Each call is a new "
                "shell; background processes are killed when it exits. Output is "
                "Long output is saved to a file: you get a preview and its path "
                "(page through it with read). "
                "Prefer read/grep/glob for reading files."
            ),
            input_model=BashInput,
            concurrency=self._concurrency,
            interrupt=Interrupt.CANCEL,
            timeout=MAX_TIMEOUT + 30,
            abort_siblings_on_error=True,
        )

    @staticmethod
    def _concurrency(args: dict[str, Any]) -> Concurrency:
        return classify_bash(args["command"])

    def permission_subject(self, args: dict[str, Any]) -> str:
        """The command, for permission rules such as ``bash(git log:*)``."""
        return str(args["command"])

    def access_for(self, args: dict[str, Any]) -> Access | None:
        """Reads the workspace when read-only; undeclared (a barrier) otherwise."""
        if self.concurrency_for(args) is Concurrency.SAFE:
            return Access(reads=(Workspace.key(self.workspace.root), "proc:bash"))
        return None

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the command; returns its output, or raises for failure or timeout."""
        command = args["command"]
        if "\x00" in command:
            raise ToolInputError("the command contains a NUL byte")
        timeout = args["timeout"] or DEFAULT_TIMEOUT
        before = read_fingerprints(ctx.state)
        outcome = await run_shell(
            command,
            cwd=self.workspace.root,
            env=self.env,
            time_limit=timeout,
            max_output_bytes=self.max_output_bytes,
        )
        changed = changed_read_files(before, read_fingerprints(ctx.state))
        text = _with_hint(outcome.output, changed, self.workspace)
        if outcome.timed_out:
            raise ToolTimeoutError(
                f"Command timed out after {timeout:g}s; its process group was "
                f"killed.\n{text}".rstrip()
            )
        if _failed(command, outcome):
            raise ToolError(f"{text.rstrip()}\n[{_status(outcome)}]".lstrip())
        if outcome.returncode != 0:
            return f"{text.rstrip()}\n[{_status(outcome)}]".lstrip()
        return text if text.strip() else "(no output)"


def _failed(command: str, outcome: ShellOutcome) -> bool:
    code = outcome.returncode
    if code == 0:
        return False
    return not (code == 1 and last_command_name(command) in _EXIT_1_IS_AN_ANSWER)


def _status(outcome: ShellOutcome) -> str:
    code = outcome.returncode
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}"


def _with_hint(output: str, changed: list[Any], workspace: Workspace) -> str:
    if not changed:
        return output
    names = ", ".join(workspace.relative(p) for p in changed)
    return (
        f"{output.rstrip()}\n\n[note: this command changed files you read "
        f"earlier: {names}. Read them again before editing them.]"
    )
