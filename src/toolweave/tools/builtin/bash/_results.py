"""How a finished bash command becomes its result text: status, notes, stale-read hint."""

from __future__ import annotations

from typing import Any

import anyio.to_thread

from .._workspace import Workspace
from ._classifier import last_command_name
from ._process import ShellOutcome

__all__ = ["failed", "status", "status_name", "with_hint", "with_notes"]

_EXIT_1_IS_AN_ANSWER = frozenset(
    {"grep", "egrep", "fgrep", "rg", "diff", "cmp", "test", "["}
)
"""Commands whose exit status 1 means "no" (no match, files differ), not failure."""


async def status_name(command: str, outcome: ShellOutcome) -> str | None:
    """The name of the command whose exit 1 decides, parsed off the event loop."""
    if outcome.returncode != 1:
        return None
    return await anyio.to_thread.run_sync(last_command_name, command)


def failed(name: str | None, outcome: ShellOutcome) -> bool:
    code = outcome.returncode
    if code == 0:
        return False
    return not (code == 1 and name in _EXIT_1_IS_AN_ANSWER)


def status(outcome: ShellOutcome) -> str:
    code = outcome.returncode
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}"


def with_notes(output: str, notes: list[str]) -> str:
    if not notes:
        return output
    return "\n\n".join([output.rstrip(), *notes]).lstrip()


def with_hint(output: str, changed: list[Any], workspace: Workspace) -> str:
    if not changed:
        return output
    names = ", ".join(workspace.relative(p) for p in changed)
    return (
        f"{output.rstrip()}\n\n[note: this command changed files you read "
        f"earlier: {names}. Read them again before editing them.]"
    )
