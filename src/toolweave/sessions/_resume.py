"""Resuming a session: answer what a dead process left unanswered, never re-run it."""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

from .._exceptions import StoreError, UsageError
from ..events import CompletionReason, FileRead
from ..messages import Message, ToolCall, ToolResult
from ._codec import file_read_from_json
from ._lease import DEFAULT_LEASE_TERM, SessionLease
from ._records import CallRecord, CallState, SessionInfo
from ._store import SessionStore
from ._suspension import Suspension, suspension_from_store

__all__ = [
    "RESUME_PROMPT",
    "ResumePlan",
    "lost_result",
    "prepare_resume",
    "read_state",
    "skipped_result",
]

RESUME_PROMPT = (
    "[toolweave] This session was interrupted and has been resumed. Continue the task."
    " Tool calls marked as interrupted may or may not have taken effect: check before"
    " repeating them."
)
"""The prompt a resume sends when none is given and the session has none pending."""


def lost_result(call: ToolCall) -> ToolResult:
    """The answer to a call that was running when its process died."""
    return ToolResult(
        call.id,
        f"Interrupted, outcome unknown: the process running this session stopped while"
        f" the tool {call.name!r} was running, so whether it took effect (fully, partly"
        " or not at all) is unknown. It was not run again; check its effects before"
        " repeating it.",
        is_error=True,
        synthetic=True,
    )


def skipped_result(call: ToolCall) -> ToolResult:
    """The answer to a call that had not started when its process died.

    Given only when that is known: the run was recorded with the start barrier
    (`RunInfo.write_ahead`) and the call has no RUNNING row.
    """
    return ToolResult(
        call.id,
        f"Not run: the process running this session stopped before the tool"
        f" {call.name!r} started. It was never started.",
        is_error=True,
        synthetic=True,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumePlan:
    """What `prepare_resume` decided: the history to continue from and the prompt."""

    session: SessionInfo
    """The session."""
    history: tuple[Message, ...]
    """The stored transcript, every tool call answered."""
    prompt: str
    """The prompt the resumed run starts with."""
    lost: tuple[CallRecord, ...] = ()
    """Calls that were running, or may have been, when the process died (answered:
    outcome unknown)."""
    skipped: tuple[CallRecord, ...] = ()
    """Calls known not to have started (answered: not run)."""
    read_files: tuple[FileRead, ...] = ()
    """What the session had read (its last `ReadStateChanged`): restore it with
    ``agent.state.read_files.restore(plan.read_files)`` so read-before-edit knows
    them (a file changed on disk since is still refused)."""
    suspension: Suspension | None = None
    """Set when the session's last run suspended for a person's decision: its
    calls wait (`Suspension.pending`); resume it with the decisions
    (``Agent.resume(plan.suspension, decisions, recorder=...)``). `history` is
    then the transcript up to those calls, and `prompt` is empty."""
    lease: SessionLease | None = None
    """The session's lease, held for the resumed run: hand it to its recorder
    (``SessionRecorder(..., lease=plan.lease)``), which renews and releases it;
    release it yourself (``plan.lease.release()``) if no run follows."""


def read_state(store: SessionStore, session_id: str) -> tuple[FileRead, ...]:
    """The session's read ledger as last recorded (empty if it never read a file).

    Raises:
        StoreError: if the recorded ledger is malformed.
    """
    last = None
    for event in store.events(session_id):
        if event.kind == "ReadStateChanged":
            last = event
    if last is None:
        return ()
    return tuple(file_read_from_json(f) for f in last.data.get("files", ()))


def _latest_records(
    store: SessionStore, session: SessionInfo, calls: tuple[ToolCall, ...]
) -> dict[str, CallRecord]:
    """The records of `calls` by `ToolCall.ref`, from the session's last run only.

    The cut batch is the last run's (a run that starts appends its prompt first),
    and refs are only unique within a run: an earlier run's call at the same
    position must never answer this one.
    """
    refs = {c.ref for c in calls}
    runs = {session.runs} | _suspended_before(store, session)
    found: dict[str, CallRecord] = {}
    for record in store.calls(session.id):  # ordered: later runs and iterations last
        if (
            record.run in runs
            and record.call.ref in refs
            and record.state is not CallState.DISCARDED
        ):
            found[record.call.ref] = record
    return found


def _suspended_before(store: SessionStore, session: SessionInfo) -> set[int]:
    """The runs right before the last that suspended: the cut batch began in them.

    A resumed run that died went on with a batch a suspended run had partly
    run; what finished there is that batch's record too (never run again).
    """
    found: set[int] = set()
    for run in reversed(store.runs(session.id)[:-1]):
        if run.reason is not CompletionReason.SUSPENDED:
            break
        found.add(run.run)
    return found


def _answer_cut_batch(
    store: SessionStore, session: SessionInfo, calls: tuple[ToolCall, ...]
) -> tuple[Message, list[CallRecord], list[CallRecord]]:
    records = _latest_records(store, session, calls)
    runs = store.runs(session.id)
    # "Not run" only where it is known: the run's calls waited for their RUNNING
    # row to be durable before starting. Otherwise any call may have run.
    barrier = bool(runs) and runs[-1].write_ahead
    results: list[ToolResult] = []
    lost: list[CallRecord] = []
    skipped: list[CallRecord] = []
    for call in calls:
        record = records.get(call.ref)
        if record is not None and record.result is not None:
            results.append(record.result)
            continue
        started = not barrier or (
            record is not None and record.state in (CallState.RUNNING, CallState.LOST)
        )
        result = lost_result(call) if started else skipped_result(call)
        results.append(result)
        if record is not None:
            state = CallState.LOST if started else CallState.SKIPPED
            updated = dataclasses.replace(record, state=state, result=result)
            store.put_call(updated)
            (lost if started else skipped).append(updated)
    return Message("user", tuple(results)), lost, skipped


def prepare_resume(
    store: SessionStore,
    id_or_prefix: str,
    *,
    prompt: str | None = None,
    lease: SessionLease | None = None,
    owner: str | None = None,
    term: float = DEFAULT_LEASE_TERM,
) -> ResumePlan:
    """Take the session's lease, repair the stored session so it can continue, and say how.

    The lease comes first (one transaction): of two processes resuming one
    session at once, exactly one gets past it; the other is refused with
    `SessionBusyError` naming the holder. The plan carries the lease
    (`ResumePlan.lease`) for the resumed run's recorder; the next
    `SessionRecorder` of this session in this process made without ``lease=``
    takes it up too (once), so the resumed run is the one that holds it.

    If the transcript ends with tool calls a dead process never answered, each
    gets its stored result if it finished, "not run" if it is known not to have
    started (the run was recorded with the start barrier and the call has no
    RUNNING row), and "interrupted, outcome unknown" otherwise; nothing is run
    again. The answers are written to the store before this returns. A session
    whose last run suspended for a person's decision is left as it is: the plan
    carries its `Suspension` (resume it with the decisions; a `prompt` is
    refused then, the calls wait for an answer first). Once a resumed run
    started, the session is no longer suspended, so a second resume of the
    same suspension finds none. Without
    `prompt`, an unanswered final user prompt is sent again (its stored copy is
    archived, the run records it anew); otherwise `RESUME_PROMPT` is used.

    Args:
        store: The store.
        id_or_prefix: The session id, or a unique prefix.
        prompt: What to say next; None = carry on.
        lease: The session's lease if already held; None = taken here for
            `owner` (default: this process) with `term`.
        owner: ``host:pid`` to hold the lease as.
        term: The lease's term (seconds without a heartbeat before takeover).

    Raises:
        SessionBusyError: another live owner holds the session.
        StoreError: unknown session, a damaged row, or a session that finished
            normally and no `prompt` was given (the lease is released then).
    """
    session = store.find_session(id_or_prefix)
    if lease is not None:
        if lease.session_id != session.id:
            raise UsageError(
                f"the lease handed to prepare_resume is for session"
                f" {lease.session_id[:12]}, not {session.id[:12]}"
            )
        lease.renew()  # still held (SessionBusyError if a successor took it)
    held = lease or SessionLease.acquire(store, session.id, owner=owner, term=term)
    try:
        plan = _repair(store, session, prompt)
    except BaseException:
        if lease is None:
            with contextlib.suppress(StoreError):
                held.release()
        raise
    held.hand_over()  # a recorder of this session made without lease= takes it up
    return dataclasses.replace(plan, lease=held)


def _repair(
    store: SessionStore, session: SessionInfo, prompt: str | None
) -> ResumePlan:
    messages = store.messages(session.id)
    if not messages:
        raise StoreError(f"session {session.id[:12]} has no messages to continue from")
    run = max(session.runs, 1)
    lost: list[CallRecord] = []
    skipped: list[CallRecord] = []
    last = messages[-1]
    suspension = suspension_from_store(store, session.id, messages)
    if suspension is not None:
        if prompt is not None:
            keys = ", ".join(p.key for p in suspension.pending)
            raise UsageError(
                f"session {session.id[:12]} is suspended: calls wait for a decision"
                f" ({keys}); approve or deny them first (toolweave resume"
                f" {session.id[:12]} --approve KEY --deny KEY)"
            )
        return ResumePlan(
            session=session,
            history=tuple(messages),
            prompt="",
            read_files=read_state(store, session.id),
            suspension=suspension,
        )
    if last.role == "assistant" and last.tool_calls:
        answer, lost, skipped = _answer_cut_batch(store, session, last.tool_calls)
        store.append_message(session.id, answer, run=run)
        messages.append(answer)
    elif prompt is None and last.role == "user" and not last.tool_results:
        prompt = last.text
        messages.pop()
        store.set_transcript(session.id, messages, run=run)
    if prompt is None:
        if session.status == "completed":
            raise StoreError(
                f"session {session.id[:12]} completed; give a prompt to continue it"
            )
        prompt = RESUME_PROMPT
    return ResumePlan(
        session=session,
        history=tuple(messages),
        prompt=prompt,
        lost=tuple(lost),
        skipped=tuple(skipped),
        read_files=read_state(store, session.id),
    )
