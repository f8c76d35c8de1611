"""Suspension: what a run stopped for a person's decision leaves, and its stored form.

A suspended run ends with its last assistant message's calls partly answered:
those that finished keep their results (`done`), those that wait for a
decision (`pending`) and those held back behind them have none. A
`Suspension` is everything a resume needs; `RunResult.suspension` gives it
in the process that ran, `suspension_from_store` rebuilds it from a session
store in any other (the session's last run ended SUSPENDED: its
`RunSuspended` event and its FINISHED call records).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import StoreError, UsageError
from ..events import CompletionReason, PendingApproval
from ..messages import Message, ToolCall, ToolResult
from ._records import CallState, EventRecord
from ._store import SessionStore

__all__ = ["Suspension", "suspension_from_store"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Suspension:
    """A run suspended for a person's decision: resume it once with the decisions.

    Single use: `claim` marks it taken (a second resume of the same object is
    refused; across processes the session's lease and its stored last run
    refuse it, see `prepare_resume`).
    """

    messages: tuple[Message, ...]
    """The transcript up to the assistant message whose calls wait (its last)."""
    pending: tuple[PendingApproval, ...]
    """The calls that wait for a decision, in call order."""
    done: Mapping[str, ToolResult] = field(default_factory=dict)
    """Results of the batch's calls that ran, by call key (kept, never run again)."""
    iteration: int = 0
    """The iteration of the suspended batch (the resumed run goes on from it)."""
    always: tuple[tuple[str, str | None], ...] = ()
    """The session's "always" approvals so far (restored on resume)."""
    signals: tuple[tuple[str, str, str], ...] = ()
    """What hooks said about the batch's calls before it suspended (PostToolUse
    context of the calls that ran, PreToolUse context of the waiting ones), as
    ``(kind, call key, text)``: the resumed batch ends with it as an
    uninterrupted one would."""
    session_id: str | None = None
    """The stored session, when it came from a store."""
    _claimed: list[bool] = field(default_factory=list, compare=False, repr=False)

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every call of the suspended batch, in call order."""
        return self.messages[-1].tool_calls if self.messages else ()

    @property
    def waiting(self) -> tuple[ToolCall, ...]:
        """The calls without a result yet (pending, or held behind one), in call order."""
        return tuple(c for c in self.calls if c.ref not in self.done)

    def claim(self) -> None:
        """Take it for one resume.

        Raises:
            UsageError: it was resumed already.
        """
        if self._claimed:
            raise UsageError(
                "this suspension was resumed already; a suspended run resumes once"
                " (its approved calls must not run twice)"
            )
        self._claimed.append(True)


def _pending_from_json(data: Mapping[str, Any]) -> PendingApproval:
    try:
        return PendingApproval(
            str(data["key"]),
            str(data["call_id"]),
            str(data["tool"]),
            dict(data.get("input") or {}),
            str(data.get("reason", "")),
            rules=tuple(str(r) for r in data.get("rules", ())),
            source=str(data.get("source", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"a stored pending approval is malformed: {exc!r}") from exc


def _last_suspension(
    events: Sequence[EventRecord], run: int
) -> Mapping[str, Any] | None:
    found = None
    for event in events:
        if event.run == run and event.kind == "RunSuspended":
            found = event.data
    return found


def suspension_from_store(
    store: SessionStore, session_id: str, messages: Sequence[Message]
) -> Suspension | None:
    """The session's suspension if its last run ended SUSPENDED, else None.

    `messages`: the stored transcript (its last message holds the waiting calls).

    Raises:
        StoreError: the stored suspension is damaged (no `RunSuspended` event).
    """
    runs = store.runs(session_id)
    if not runs or runs[-1].reason is not CompletionReason.SUSPENDED:
        return None
    last = runs[-1]
    if not messages or messages[-1].role != "assistant":
        raise StoreError(
            f"session {session_id[:12]} is suspended, but its transcript does not"
            " end with the calls that wait"
        )
    data = _last_suspension(store.events(session_id), last.run)
    if data is None:
        raise StoreError(
            f"session {session_id[:12]} is suspended, but what waits was not recorded"
        )
    refs = {c.ref for c in messages[-1].tool_calls}
    # A resumed run that suspended again on the same batch ran only part of it:
    # the runs of this batch are the trailing SUSPENDED ones (later ones win).
    batch_runs = set()
    for run in reversed(runs):
        if run.reason is not CompletionReason.SUSPENDED:
            break
        batch_runs.add(run.run)
    done: dict[str, ToolResult] = {}
    for record in store.calls(session_id):  # ordered by run: later runs last
        if (
            record.run in batch_runs
            and record.state is CallState.FINISHED
            and record.result is not None
            and record.call.ref in refs
        ):
            done[record.call.ref] = record.result
    try:
        always = tuple(
            (str(tool), None if subject is None else str(subject))
            for tool, subject in data.get("always", ())
        )
        iteration = int(data.get("iteration", 0))
        signals = tuple(
            (str(kind), str(key), str(text))
            for kind, key, text in data.get("signals", ())
        )
    except (TypeError, ValueError) as exc:
        raise StoreError(f"a stored suspension is malformed: {exc!r}") from exc
    pending = tuple(_pending_from_json(p) for p in data.get("pending", ()))
    for item in pending:
        done.pop(item.key, None)  # a pending call has no result of its own
    return Suspension(
        messages=tuple(messages),
        pending=pending,
        done=done,
        iteration=iteration,
        always=always,
        signals=signals,
        session_id=session_id,
    )
