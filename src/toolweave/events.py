"""Typed events: what a run reports while it goes.

Every event is a frozen dataclass with the anyio time it was created (`at`), so
that under trio's MockClock timelines are exact. Tool events carry the call (or
its id and `key`): match them by `ToolCall.key`, the call's position, never by id
alone, which models repeat. `ToolUseStarted` arrives in call order,
`ToolResultReady` in completion order.
`MessageAppended` and `TranscriptReplaced` report every change of a run's
transcript as it happens, so a consumer can mirror it exactly.
Events are created inside an event loop (they read `anyio.current_time()`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeAlias

import anyio

from .messages import Message, ModelResponse, ToolCall, ToolResult, Usage

__all__ = [
    "CompactBoundary",
    "CompletionReason",
    "DeclarationViolation",
    "Event",
    "FileRead",
    "InterruptBehaviour",
    "IterationStarted",
    "LoopTransition",
    "MessageAppended",
    "ModelCallFinished",
    "ModelCallStarted",
    "PendingApproval",
    "PermissionAnswered",
    "PermissionAsked",
    "ReadStateChanged",
    "ReasoningDelta",
    "Retry",
    "RunFinished",
    "RunStarted",
    "RunSuspended",
    "TextDelta",
    "ToolProgress",
    "ToolResultReady",
    "ToolRunning",
    "ToolUseStarted",
    "TranscriptReplaced",
    "Warning",
]


InterruptBehaviour: TypeAlias = Literal["cancel", "block"]
"""What interrupting the run does to a running call (the values of `toolweave.tools.Interrupt`):
``"cancel"``: it is stopped now and answered "interrupted"; ``"block"``: it runs to
its end and its real result is recorded."""


def _now() -> float:
    return anyio.current_time()


class CompletionReason(enum.Enum):
    """How a run ended. Every run ends with exactly one of these; none is hidden."""

    COMPLETED = "completed"
    TRUNCATED = "truncated"
    MAX_ITERATIONS = "max_iterations"
    BUDGET_EXCEEDED = "budget_exceeded"
    COST_BUDGET_EXCEEDED = "cost_budget_exceeded"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    HOOK_STOPPED = "hook_stopped"
    CONTEXT_WINDOW_EXCEEDED = "context_window_exceeded"
    """The next request could not be made to fit the model's context window; it was not sent."""
    SUSPENDED = "suspended"
    """A call must ask and nobody can answer now (``AgentConfig(on_ask="suspend")``):
    the run stopped to wait for a person's decision. `RunResult.pending` lists what
    waits; ``Agent.resume`` continues with the decisions (see docs/human-in-the-loop.md)."""


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run began."""

    run_id: str
    """Identifies the run (and its stored session)."""
    prompt: str
    """The user's prompt."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class IterationStarted:
    """One model call plus its tool batch began."""

    iteration: int
    """1-based iteration number."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ModelCallStarted:
    """A request went to the model (the start of the streaming interval)."""

    iteration: int
    """The iteration this call belongs to."""
    model: str
    """The model name asked."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ModelCallFinished:
    """The model's response is final (the end of the streaming interval)."""

    iteration: int
    """The iteration this call belongs to."""
    response: ModelResponse
    """The aggregated response."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's visible text, as it streams."""

    text: str
    """The new text."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning, as it streams."""

    text: str
    """The new reasoning text."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ToolUseStarted:
    """A call was admitted by the scheduler. Emitted in call order.

    `reads` and `writes` are the resource keys the scheduler's gate classified
    the call as touching (``("*",)`` written: a barrier), so a recorder needs no
    registry to know what the call claimed; both None where the scheduler
    classified nothing (a call run alone, concurrency off, a call answered
    without running).
    """

    call: ToolCall
    """The call."""
    _: KW_ONLY
    iteration: int = 0
    """The iteration of the batch (0 outside an agent run)."""
    reads: tuple[str, ...] | None = None
    """Keys the call claims to read, as the gate saw it; None if not classified."""
    writes: tuple[str, ...] | None = None
    """Keys the call claims to write, as the gate saw it; None if not classified."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ToolRunning:
    """A call actually began executing (its dependencies and slot were granted).

    `interrupt` says what an interrupt of the run (Ctrl-C in the CLI,
    `AgentRun.interrupt`) does to it while it runs, so a view can tell the user
    before they press it.
    """

    call_id: str
    """The call's id (models repeat ids: match the call by `key`)."""
    _: KW_ONLY
    key: str = ""
    """The call's `ToolCall.key` (empty for a call made outside the agent loop)."""
    interrupt: InterruptBehaviour = "cancel"
    """``"cancel"`` (stopped at once) or ``"block"`` (runs to its end): its tool's `Interrupt`."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class PermissionAsked:
    """A call waits for the user's answer to a permission ask.

    Emitted when the permission stage hands the call to the ask handler (before
    waiting for another call's question to be answered: asks are put one at a
    time), so the time until its `PermissionAnswered` is time spent waiting for
    a person, which timings show as such and leave out of the batch's wall time.
    """

    call_id: str
    """The call's id (models repeat ids: match the call by `key`)."""
    tool: str
    """The tool's name."""
    reason: str
    """Why approval is needed, as the user is told."""
    _: KW_ONLY
    key: str = ""
    """The call's `ToolCall.key` (empty for a call made outside the agent loop)."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class PermissionAnswered:
    """The wait that a `PermissionAsked` began is over."""

    call_id: str
    """The call's id (models repeat ids: match the call by `key`)."""
    answer: str
    """``allow``, ``always`` or ``deny`` as the handler answered; ``approved``
    when an "always" given while this call waited covered it; ``failed`` when
    the handler raised or answered something else; ``cancelled`` when the wait
    was cut (the run interrupted or stopped, a run deadline, the call
    cancelled): the call is then answered "not run"; ``suspended`` when nobody
    could answer and the run suspends to wait for a person (`RunSuspended`)."""
    _: KW_ONLY
    key: str = ""
    """The call's `ToolCall.key` (empty for a call made outside the agent loop)."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running tool reported progress. Delivered at once, in no particular order."""

    call_id: str
    """The call's id (models repeat ids: match the call by `key`)."""
    message: str
    """What the tool said."""
    _: KW_ONLY
    key: str = ""
    """The call's `ToolCall.key` (empty for a call made outside the agent loop)."""
    fraction: float | None = None
    """Completion between 0 and 1, if the tool knows it."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class ToolResultReady:
    """A call finished. Emitted in completion order; match it by `call.key`.

    (Not by `result.call_id`: models repeat ids, within a response and across turns.)
    """

    call: ToolCall
    """The call."""
    result: ToolResult
    """Its result."""
    _: KW_ONLY
    iteration: int = 0
    """The iteration of the batch (0 outside an agent run)."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class DeclarationViolation:
    """A running call did something its declaration does not cover (the declaration audit).

    Reported once the call is over, before its `ToolResultReady`. With the audit
    in ``"enforce"`` mode the operation was stopped (`blocked`) and the call
    ended with an error result naming it; in ``"warn"`` mode it went ahead.
    """

    call_id: str
    """The call's id (models repeat ids: match the call by `key`)."""
    tool: str
    """The tool's name."""
    operation: str
    """The audit event: ``open``, ``os.remove``, ``subprocess.Popen``, ``socket.connect``…"""
    target: str
    """The absolute path, the command, or the address."""
    source: str
    """``file:line`` in the tool's own code that did it ('' if not found)."""
    _: KW_ONLY
    key: str = ""
    """The call's `ToolCall.key` (empty for a call made outside the agent loop)."""
    reason: str = ""
    """Why it breaks the declaration, in words."""
    blocked: bool = False
    """True if the operation was stopped (enforce mode)."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class Retry:
    """A model call failed and will be retried (possibly on a fallback model)."""

    attempt: int
    """The attempt that failed (1-based)."""
    delay: float
    """Seconds until the next attempt."""
    error: str
    """What went wrong."""
    _: KW_ONLY
    model: str | None = None
    """The model the next attempt will use."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class CompactBoundary:
    """The conversation was compacted."""

    messages_before: int
    """Message count before compaction."""
    messages_after: int
    """Message count after compaction."""
    _: KW_ONLY
    reason: str = "auto"
    """Why: ``"auto"``, ``"prompt_too_long"``, ``"context_guard"`` (a request that
    would not fit was shrunk before it was sent), ``"micro_compaction"`` (old tool
    results cleared to stubs) or ``"manual"``."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class LoopTransition:
    """The loop moved to its next step for a stated reason."""

    reason: str
    """A short machine-readable reason, such as ``"tool_use"`` or ``"max_tokens_recovery"``."""
    _: KW_ONLY
    detail: str = ""
    """Human-readable detail."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class Warning:
    """Something the user should know that did not stop the run."""

    message: str
    """What happened."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended. Always the last event of a run."""

    reason: CompletionReason
    """How it ended."""
    output: str
    """The final text (possibly partial, with a marker, when truncated)."""
    _: KW_ONLY
    usage: Usage = field(default_factory=Usage)
    """Tokens used across the run."""
    cost: float = 0.0
    """Estimated USD cost."""
    messages: tuple[Message, ...] = ()
    """The whole transcript."""
    detail: str = ""
    """Why it ended, in words (for ERROR and budget stops)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    """Anything else the loop wants to report."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class MessageAppended:
    """A message joined the run's transcript, exactly as the model will see it.

    Emitted for every message the loop appends (the prompt, each assistant
    response, each tool-results message as finally sent, injected input, stop
    hook continuations), right when it is appended. Applying these events (and
    `TranscriptReplaced`) to the run's history, in order, gives its transcript.
    """

    message: Message
    """The message."""
    index: int
    """Its 0-based position in the transcript (a resumed run's history included)."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class TranscriptReplaced:
    """The loop rewrote the run's transcript (compaction, prompt-too-long recovery)."""

    messages: tuple[Message, ...]
    """The whole new transcript."""
    reason: str
    """Why: as in `CompactBoundary` (``"auto"``, ``"prompt_too_long"``,
    ``"context_guard"``, ``"micro_compaction"``)."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class FileRead:
    """One file the session has read (or written): what the read-before-edit guard knows."""

    path: str
    """The absolute path."""
    mtime_ns: int
    """Its modification time when last read or written."""
    size: int
    """Its size then."""
    ranges: tuple[tuple[int, int | None], ...] = ()
    """Line spans shown since it last changed: (first line, lines shown or None = to the end)."""


@dataclass(frozen=True, slots=True)
class ReadStateChanged:
    """The session's read ledger changed during a tool batch; `files` is all of it now.

    Recorded with the session, so a resumed session knows what it had read:
    an edit of a file read before works, and a stale read (the file changed on
    disk since) is still refused.
    """

    files: tuple[FileRead, ...]
    """Every file known to the session, sorted by path."""
    _: KW_ONLY
    at: float = field(default_factory=_now)
    """anyio time of the event."""


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call that waits for a person's decision (a suspended run's `RunResult.pending`).

    Decide it by `key` (``Agent.resume(suspension, {key: "allow" | "deny" | "always"})``,
    or ``toolweave resume ID --approve KEY``).
    """

    key: str
    """The call's key (`ToolCall.ref`: its place in the run, unique where ids repeat)."""
    call_id: str
    """The provider's id of the call."""
    tool: str
    """The tool's name."""
    input: Mapping[str, Any]
    """The call's input as the model sent it (PreToolUse hooks run on it again on resume)."""
    reason: str
    """Why it asks (the permission decision's reason)."""
    _: KW_ONLY
    rules: tuple[str, ...] = ()
    """Allow rules that would let such calls run without asking (none when only a
    person can: an ask rule, a hook, a shell command the tool names itself)."""
    source: str = ""
    """What asked: ``"mode"``, ``"rule"``, ``"hook"`` or ``"tool"``."""


@dataclass(frozen=True, slots=True)
class RunSuspended:
    """The run stops to wait for decisions on `pending` (right before `RunFinished`).

    What the session store keeps so another process can resume: the calls that
    wait, in call order, the iteration they belong to, and the "always" approvals
    given so far in the session (each a ``(tool, subject)`` pair, subject None = any).
    Calls of the batch that finished keep their results (their `ToolResultReady`);
    calls that wait (these) or never started are reported by no `ToolResultReady`.
    """

    pending: tuple[PendingApproval, ...]
    """What waits, in call order."""
    _: KW_ONLY
    iteration: int = 0
    """The iteration whose batch is suspended."""
    always: tuple[tuple[str, str | None], ...] = ()
    """The session's "always" approvals so far."""
    held: tuple[str, ...] = ()
    """Keys of calls of the batch that had not started when it suspended (they run on resume)."""
    signals: tuple[tuple[str, str, str], ...] = ()
    """What hooks said about the batch's calls so far: ``(kind, call key, text)``,
    kind ``"context"`` (for the model) or ``"stop"``; given back on resume."""
    at: float = field(default_factory=_now)
    """anyio time of the event."""


Event: TypeAlias = (
    RunStarted
    | IterationStarted
    | ModelCallStarted
    | ModelCallFinished
    | TextDelta
    | ReasoningDelta
    | ToolUseStarted
    | ToolRunning
    | PermissionAsked
    | PermissionAnswered
    | ToolProgress
    | ToolResultReady
    | DeclarationViolation
    | Retry
    | CompactBoundary
    | LoopTransition
    | Warning
    | RunSuspended
    | RunFinished
    | MessageAppended
    | TranscriptReplaced
    | ReadStateChanged
)
"""Any event a run can emit."""
