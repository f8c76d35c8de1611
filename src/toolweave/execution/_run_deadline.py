"""RunDeadline: the time by which every call of a run is answered (its wall-clock budget)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from ..messages import ToolCall, ToolResult

__all__ = ["RunDeadline"]


@final
@dataclass(frozen=True, slots=True)
class RunDeadline:
    """A bound on a run's calls, given to a `ToolRunner` (the loop's wall-clock budget).

    A bound, not an interrupt (issue 24, item 9): a call that reaches the
    runner at or after `at` is answered "not run"; one still in its
    validation, PreToolUse hooks or permission ask at `at` is answered "not
    run" (it never started); a tool still running at `at` is cut as at its
    timeout, whatever its `Interrupt` (BLOCK too: that governs user
    interrupts), its worker thread abandoned as a timeout abandons it, and
    answered "timed out ... effects unknown". What follows a finished tool
    (result mapping, PostToolUse hooks) may take `grace` seconds more.
    """

    at: float
    """The anyio time the bound falls."""
    what: str
    """The bound in words, for results: ``the run's wall-clock budget (…)``."""
    grace: float = 2.0
    """Seconds past `at` the steps after a finished tool may take."""

    def remaining(self, now: float) -> float:
        """Seconds left at `now` (0 or less: spent)."""
        return self.at - now

    def not_run(self, call: ToolCall) -> ToolResult:
        """The answer to a call that had not started when the bound fell."""
        return ToolResult(
            call.id,
            f"Not run: {self.what} ran out before the call to {call.name!r} could"
            f" start. The tool {call.name!r} was never started.",
            is_error=True,
            synthetic=True,
        )

    def cut(self, name: str, seconds: float, *, thread_left: bool) -> str:
        """The error of a tool cut at the bound after running `seconds`."""
        note = (
            " It ran on a worker thread, which cannot be stopped; the thread was"
            " abandoned and may still finish its work."
            if thread_left
            else ""
        )
        return (
            f"Timed out: {self.what} ran out while the tool {name!r} ran (after"
            f" {seconds:.3g} s); it was stopped, and any effects it had are"
            f" unknown.{note}"
        )
