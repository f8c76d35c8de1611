"""The state behind the live view: one `Turn` per iteration, one `CallRow` per tool call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, final

from ..events import (
    DeclarationViolation,
    Event,
    InterruptBehaviour,
    IterationStarted,
    ModelCallFinished,
    ModelCallStarted,
    PermissionAnswered,
    PermissionAsked,
    Retry,
    TextDelta,
    ToolResultReady,
    ToolRunning,
    ToolUseStarted,
)
from ..events import Warning as WarningEvent
from ..messages import ToolCall, ToolResult
from ..scheduling import BatchStats, CallSpan, batch_stats
from ..sessions import AccessRecord
from ._audit_view import violation_line

__all__ = ["CallRow", "Turn", "TurnTracker", "call_label"]

_LABEL_KEYS = ("command", "pattern", "path", "url", "file_path", "query")


def call_label(call: ToolCall, width: int = 44) -> str:
    """``name argument``: the tool and its most telling argument, shortened."""
    arg: Any = next((call.input[k] for k in _LABEL_KEYS if k in call.input), None)
    if arg is None:
        arg = next((v for v in call.input.values() if isinstance(v, str)), "")
    text = f"{call.name} {' '.join(str(arg).split())}".strip()
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(slots=True)
class CallRow:
    """One call as the view shows it."""

    call: ToolCall
    access: AccessRecord | None = None
    admitted: float | None = None
    start: float | None = None
    end: float | None = None
    result: ToolResult | None = None
    interrupt: InterruptBehaviour | None = None
    """What an interrupt does to it while it runs (from its `ToolRunning`)."""
    violations: list[DeclarationViolation] = field(default_factory=list)
    """What the declaration audit reported for this call."""
    waits: list[tuple[float, float]] = field(default_factory=list)
    """When it waited for the user's answer to a permission ask."""
    asked: float | None = None
    """When the ask it waits on now began (None: none open)."""

    @property
    def state(self) -> str:
        """Waiting / running / done / error / synthetic."""
        if self.result is not None:
            if self.result.synthetic:
                return "synthetic"
            return "error" if self.result.is_error else "done"
        return "running" if self.start is not None else "waiting"

    def span(self) -> CallSpan:
        """The row's timing for batch arithmetic."""
        return CallSpan(self.start, self.end, self.access, tuple(self.waits))


@dataclass(slots=True)
class Turn:
    """One iteration: the model's streamed text and its tool batch."""

    number: int
    text: str = ""
    model_start: float | None = None
    model_end: float | None = None
    rows: dict[str, CallRow] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def interrupt_hint(self) -> str | None:
        """What Ctrl-C would do now to this turn's calls, in words; None when none runs.

        From each running call's `ToolRunning.interrupt`: CANCEL calls are stopped
        at once, BLOCK calls run to their end (their real result kept); calls
        still waiting never start. A second Ctrl-C quits at once and kills what
        is left (its effects then unknown).
        """
        rows = list(self.rows.values())
        running = [r for r in rows if r.start is not None and r.result is None]
        if not running:
            return None
        waiting = sum(r.start is None and r.result is None for r in rows)
        blocking = [r for r in running if r.interrupt == "block"]
        cancelled = len(running) - len(blocking)
        later = f"; {_calls(waiting)} waiting will not start" if waiting else ""
        if not blocking:
            return f"Ctrl-C stops now: {_calls(cancelled)} running cancelled{later}"
        names = ", ".join(call_label(r.call, 28) for r in blocking[:3])
        more = f" and {len(blocking) - 3} more" if len(blocking) > 3 else ""
        first = f"{_calls(cancelled)} cancelled now, " if cancelled else ""
        return (
            f"Ctrl-C: {first}{_calls(len(blocking))} run to their end first"
            f" ({names}{more}){later}; press it twice to quit at once (they are"
            " killed, their effects unknown)"
        )

    def stats(self) -> BatchStats:
        """Makespan, serial and lower bound of the batch."""
        return batch_stats([row.span() for row in self.rows.values()])


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


@final
class TurnTracker:
    """Folds events into turns. Loop-thread only; never blocks.

    Args:
        describe: What a call declares it touches (for the lower bound).
        say: Rewords a run's warning for the terminal; None drops it.
    """

    def __init__(
        self,
        describe: Callable[[ToolCall], AccessRecord | None] | None = None,
        *,
        say: Callable[[str], str | None] | None = None,
    ) -> None:
        self._describe = describe
        self._say = say
        self.turns: list[Turn] = []
        """Every turn so far; the last is the current one."""
        self.origin: float | None = None
        """anyio time of the first event."""
        self.violations: list[DeclarationViolation] = []
        """Every declaration violation of the run, in order."""

    @property
    def current(self) -> Turn | None:
        """The turn in progress."""
        return self.turns[-1] if self.turns else None

    def _turn(self) -> Turn:
        if not self.turns:
            self.turns.append(Turn(0))
        return self.turns[-1]

    def _row(self, call: ToolCall) -> CallRow:
        turn = self._turn()
        row = turn.rows.get(call.ref)  # by position key: models repeat ids
        if row is None:
            access = self._describe(call) if self._describe is not None else None
            row = turn.rows[call.ref] = CallRow(call, access)
        return row

    def handle(self, event: Event) -> None:  # noqa: C901 - one branch per event kind
        """Apply one event."""
        if self.origin is None:
            self.origin = event.at
        if isinstance(event, IterationStarted):
            self.turns.append(Turn(event.iteration))
        elif isinstance(event, ModelCallStarted):
            self._turn().model_start = event.at
        elif isinstance(event, TextDelta):
            self._turn().text += event.text
        elif isinstance(event, ModelCallFinished):
            turn = self._turn()
            turn.model_end = event.at
            for call in event.response.tool_calls:
                self._row(call)
            if not turn.text and event.response.text:
                turn.text = event.response.text
        elif isinstance(event, ToolUseStarted):
            row = self._row(event.call)
            row.admitted = event.at
            if event.reads is not None and event.writes is not None:
                row.access = AccessRecord(event.reads, event.writes)
        elif isinstance(event, PermissionAsked | PermissionAnswered):
            self._permission(event)
        elif isinstance(event, ToolRunning):
            turn = self._turn()
            ref = event.key or event.call_id
            if ref in turn.rows:
                turn.rows[ref].start = event.at
                turn.rows[ref].interrupt = event.interrupt
        elif isinstance(event, ToolResultReady):
            row = self._row(event.call)
            row.end, row.result = event.at, event.result
        elif isinstance(event, Retry):
            self._turn().notes.append(
                f"retry {event.attempt}: {event.error} (in {event.delay:.1f} s)"
            )
        elif isinstance(event, WarningEvent):
            text = event.message if self._say is None else self._say(event.message)
            if text:
                self._turn().notes.append(text)
        elif isinstance(event, DeclarationViolation):
            self._violation(event)

    def _permission(self, event: PermissionAsked | PermissionAnswered) -> None:
        row = self._turn().rows.get(event.key or event.call_id)  # by position key
        if row is None:
            return
        if isinstance(event, PermissionAsked):
            row.asked = event.at
        elif row.asked is not None:
            row.waits.append((row.asked, event.at))
            row.asked = None

    def _violation(self, event: DeclarationViolation) -> None:
        self.violations.append(event)
        turn = self._turn()
        row = turn.rows.get(event.key or event.call_id)  # by position key
        if row is not None:
            row.violations.append(event)
        turn.notes.append(f"declaration audit: {violation_line(event)}")
