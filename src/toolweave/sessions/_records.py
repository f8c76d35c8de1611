"""What a session store keeps: sessions, runs, tool calls, model calls and events.

Times named ``*_at`` are seconds since the start of their run (the run's
`RunStarted`), measured on the anyio clock of the process that ran it; wall-clock
times are named ``*_wall`` (seconds since the epoch).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..events import CompletionReason
from ..messages import ToolCall, ToolResult, Usage

__all__ = [
    "AccessRecord",
    "CallRecord",
    "CallState",
    "EventRecord",
    "LeaseInfo",
    "ModelCallRecord",
    "RunInfo",
    "RunState",
    "SessionInfo",
]


class CallState(enum.Enum):
    """Where one tool call got to. Only FINISHED calls carry a result from the tool."""

    PENDING = "pending"
    """In the model's response, not yet admitted by the scheduler."""
    WAITING = "waiting"
    """Admitted (a slot taken); waiting for earlier conflicting calls or permission."""
    RUNNING = "running"
    """The tool began executing; its side effects may have started."""
    FINISHED = "finished"
    """It has a result (an error or synthetic one included)."""
    LOST = "lost"
    """It was running when its process died: interrupted, outcome unknown (never re-run)."""
    SKIPPED = "skipped"
    """It had not started when its process died; it was answered as not run."""
    DISCARDED = "discarded"
    """Its call came from a streaming attempt the model gateway threw away (a retry).

    It may have run all the same: `running_at` set means it began executing,
    and a `result` is what it did (its output, or a synthetic result saying it
    was cut, effects unknown, or never started). No transcript holds the call;
    the model was told of one that ran in its next message."""


class RunState(enum.Enum):
    """Whether a run is going, ended, or was cut off by its process dying."""

    RUNNING = "running"
    """No `RunFinished` was recorded yet (see `RunInfo.owner` to tell a crash)."""
    FINISHED = "finished"
    """It ended; `RunInfo.reason` says how."""
    ABANDONED = "abandoned"
    """Its process stopped consuming events before the run finished (a second Ctrl-C)."""


@dataclass(frozen=True, slots=True)
class AccessRecord:
    """The resource keys a call declared (see `toolweave.tools.Access`)."""

    reads: tuple[str, ...] = ()
    """Keys read."""
    writes: tuple[str, ...] = ()
    """Keys written; ``("*",)`` is a barrier."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """One stored session: a conversation continued over one or more runs."""

    id: str
    """The session id (hex); commands accept any unique prefix."""
    title: str
    """The first prompt, shortened."""
    workspace: str
    """The directory the agent worked in."""
    model: str
    """The model spec of the latest run."""
    created_wall: float
    """When it was created."""
    updated_wall: float
    """When anything was last written to it."""
    runs: int = 0
    """How many runs it has had."""
    messages: int = 0
    """Messages in its live transcript."""
    usage: Usage = field(default_factory=Usage)
    """Tokens of every run, summed."""
    cost: float = 0.0
    """USD of every run, summed (estimated)."""
    status: str = "new"
    """``running``, ``crashed`` (its process died mid-run), ``abandoned``, or the
    last run's `CompletionReason` value."""
    detail: str = ""
    """How the last run ended, in words."""
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False)
    """What its creator stored with it (`SessionStore.create_session`'s
    ``meta``): the CLI keeps the ``base_url`` its model was reached at."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunInfo:
    """One run of a session (one `Agent` run, one process)."""

    session_id: str
    """The session."""
    run: int
    """1-based run number within the session."""
    prompt: str
    """The prompt the run started with."""
    state: RunState
    """Running, finished or abandoned."""
    owner: str
    """``host:pid`` of the process that ran it."""
    started_wall: float
    """Wall-clock start."""
    finished_wall: float | None = None
    """Wall-clock end, if it ended."""
    reason: CompletionReason | None = None
    """How it ended, if it ended."""
    detail: str = ""
    """Why, in words."""
    usage: Usage = field(default_factory=Usage)
    """Tokens it used (authoritative once finished, summed per model call before)."""
    cost: float = 0.0
    """USD it cost (estimated)."""
    write_ahead: bool = False
    """True if it was recorded with the start barrier: no call of it started
    before its RUNNING row was durable, so a call without one never started.
    False (runs fed to a recorder after the fact, runs stored before the barrier
    existed): a call without a result may have run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseInfo:
    """Who holds a session: its one live owner, renewed by a heartbeat."""

    session_id: str
    """The session."""
    owner: str
    """``host:pid`` of the holder."""
    token: str
    """Identifies one holding (a second holder in the same process has another)."""
    taken_wall: float
    """When it was taken (seconds since the epoch)."""
    heartbeat_wall: float
    """When the holder last renewed it."""
    term: float
    """Seconds without a heartbeat after which a successor may take it over."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call of a session and how far it got."""

    session_id: str
    """The session."""
    run: int
    """The run it belongs to."""
    iteration: int
    """The loop iteration (1-based within its run)."""
    call: ToolCall
    """The call as the model wrote it."""
    _: KW_ONLY
    index: int = 0
    """Its position in the model's response (0-based)."""
    attempt: int = 1
    """1, or higher when a discarded streaming attempt started the same call."""
    state: CallState = CallState.PENDING
    """How far it got."""
    access: AccessRecord | None = None
    """What it declared it touches; None if unknown (treated as a barrier)."""
    admitted_at: float | None = None
    """When the scheduler admitted it (`ToolUseStarted`)."""
    running_at: float | None = None
    """When the tool began executing (`ToolRunning`)."""
    finished_at: float | None = None
    """When its result was ready (`ToolResultReady`)."""
    result: ToolResult | None = None
    """Its result, once it has one."""

    @property
    def key(self) -> tuple[str, int, int, str, int]:
        """What identifies the record: session, run, iteration, call ref, attempt.

        The call ref is its `ToolCall.ref` — its position key when the loop set
        one — never the provider's id alone, which models repeat.
        """
        return (self.session_id, self.run, self.iteration, self.call.ref, self.attempt)


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallRecord:
    """One model call: the streaming interval drawn above a batch in the timeline."""

    session_id: str
    """The session."""
    run: int
    """The run."""
    iteration: int
    """The loop iteration."""
    model: str
    """The model asked."""
    started_at: float
    """When the request went out."""
    first_chunk_at: float | None = None
    """When the first text or reasoning arrived."""
    finished_at: float | None = None
    """When the response was final (None if it never was)."""
    stop_reason: str | None = None
    """The response's stop reason."""
    usage: Usage = field(default_factory=Usage)
    """Its tokens."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecord:
    """One stored event, as JSON data (see `event_to_json`)."""

    session_id: str
    """The session."""
    run: int
    """The run."""
    seq: int
    """Order within the session (increasing)."""
    kind: str
    """The event class name, such as ``ToolRunning``."""
    at: float
    """Seconds since the run started."""
    data: Mapping[str, Any]
    """The event's fields."""
