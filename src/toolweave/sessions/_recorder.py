"""SessionRecorder: writes a run to a SessionStore as its events arrive."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import final

from ..events import (
    Event,
    IterationStarted,
    MessageAppended,
    ModelCallFinished,
    ModelCallStarted,
    ReasoningDelta,
    Retry,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolResultReady,
    ToolRunning,
    ToolUseStarted,
    TranscriptReplaced,
)
from ..messages import Message, ToolCall, Usage
from ._codec import event_to_json
from ._owner import current_owner
from ._records import AccessRecord, CallRecord, CallState, ModelCallRecord, RunState
from ._store import RunOutcome, SessionStore

__all__ = ["AccessDescriber", "Pricer", "SessionRecorder"]

logger = logging.getLogger("toolweave.sessions")

AccessDescriber = Callable[[ToolCall], AccessRecord | None]
"""What a call declares it touches (for the timeline's dependency lower bound)."""
Pricer = Callable[[str, Usage], float]
"""USD of `usage` on the named model."""

_OMIT: dict[str, tuple[str, ...]] = {  # what the messages table already holds
    "MessageAppended": ("message",),
    "TranscriptReplaced": ("messages",),
    "RunFinished": ("messages",),
    "ModelCallFinished": ("response",),
    "ToolResultReady": ("result",),
}
_NOT_STORED = (TextDelta, ReasoningDelta)
_STARTED = (CallState.WAITING, CallState.RUNNING, CallState.FINISHED)


@final
class SessionRecorder:
    """Turns one run's events into durable session records, as the run goes.

    Feed it every event of a run, in order (`record`); it writes at once (one
    committed transaction per write), so a process killed mid-run leaves
    everything up to the event in flight: the transcript exactly as the loop
    holds it (each `MessageAppended` is appended, each `TranscriptReplaced`
    becomes the live transcript, the replaced messages archived, never
    deleted), each tool call's progress (admitted, running, finished with its
    result), model-call intervals, usage, and the events themselves (text
    deltas excepted: the text is in the messages). `RunFinished` only checks
    that the transcript it carries equals the recorded one; if not (a loop that
    does not report its transcript, or a history that differs from the stored
    one) a warning is logged and the carried transcript is stored.

    Calls are known by their `ToolCall.ref` (the loop's position key), never by
    the provider's id alone: models repeat ids within a response and across turns.
    A call of a streaming attempt that was thrown away (a retry) is DISCARDED,
    and keeps being updated as it goes on: it may run, or be running, all the
    same, and its `running_at` and result then say so.

    Works with any loop that emits the `toolweave.events` protocol. Not
    thread-safe: call from the task that consumes the events. Raises
    `StoreError` when the store fails.

    Args:
        store: Where to write.
        session_id: The session the run belongs to (created beforehand).
        model: The model spec, recorded with the run.
        describe: The access each call declares; None records none.
        price: USD of a model call's usage, to keep a crashed run's cost; the
            run's own total replaces it when the run finishes.
        owner: ``host:pid`` recorded as the run's owner (default: this process);
            a run whose owner is gone reads as crashed.
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        model: str,
        describe: AccessDescriber | None = None,
        price: Pricer | None = None,
        owner: str | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.run: int | None = None
        """The run number, once `RunStarted` was recorded."""
        self.finished = False
        """True once the run's end (or abandonment) was recorded."""
        self._model = model
        self._describe = describe
        self._price = price
        self._owner = owner or current_owner()
        self._origin = 0.0
        self._iteration = 0
        self._calls: dict[str, CallRecord] = {}
        self._discarded: dict[str, CallRecord] = {}  # by ref, still updated
        self._attempts: dict[str, int] = {}
        self._model_call: ModelCallRecord | None = None
        self._usage = Usage()
        self._cost = 0.0
        self._transcript: list[Message] = []
        self._drifted = False

    # -- entry points ------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Write what `event` changes. Call once per event, in order."""
        if isinstance(event, RunStarted):
            self._run_started(event)
        if self.run is None or self.finished:
            return
        if not isinstance(event, _NOT_STORED):
            kind = type(event).__name__
            self.store.append_event(
                self.session_id,
                self.run,
                kind=kind,
                at=event.at - self._origin,
                data=event_to_json(event, omit=_OMIT.get(kind, ())),
            )
        self._apply(event)

    def abandon(self, detail: str, *, prompt: str = "") -> None:
        """Record that the run was left before it finished (the consumer stopped).

        Calls still running stay RUNNING: their outcome is unknown, and a resume
        answers them as interrupted. A run lost before its `RunStarted` arrived
        (a worker that died at once) is recorded too, with `prompt`, so the session
        reads as abandoned rather than new. Idempotent; does nothing after
        `RunFinished`.
        """
        if self.finished:
            return
        if self.run is None:
            self.run = self.store.begin_run(
                self.session_id, prompt=prompt, model=self._model, owner=self._owner
            )
        self.finished = True
        outcome = RunOutcome(
            RunState.ABANDONED, detail=detail, usage=self._usage, cost=self._cost
        )
        self.store.finish_run(self.session_id, self.run, outcome)

    # -- dispatch ------------------------------------------------------------------------

    def _apply(self, event: Event) -> None:  # noqa: C901 - one branch per event kind
        if isinstance(event, IterationStarted):
            self._iteration_started(event)
        elif isinstance(event, MessageAppended):
            self._message_appended(event)
        elif isinstance(event, TranscriptReplaced):
            self._replace(event.messages)
        elif isinstance(event, ModelCallStarted):
            self._model_started(event)
        elif isinstance(event, TextDelta | ReasoningDelta):
            self._first_chunk(event.at)
        elif isinstance(event, ModelCallFinished):
            self._model_finished(event)
        elif isinstance(event, Retry):
            self._discard_started()
        elif isinstance(event, ToolUseStarted):
            self._call_admitted(event)
        elif isinstance(event, ToolRunning):
            self._call_running(event)
        elif isinstance(event, ToolResultReady):
            self._call_finished(event)
        elif isinstance(event, RunFinished):
            self._run_finished(event)

    def _rel(self, at: float) -> float:
        return at - self._origin

    # -- the transcript -------------------------------------------------------------------

    def _message_appended(self, event: MessageAppended) -> None:
        if event.index != len(self._transcript) and not self._drifted:
            self._drifted = True  # said once; `_reconcile` repairs it at the end
            logger.warning(
                "session %s: message %d arrived with %d messages recorded; the run's"
                " history differs from the stored transcript",
                self.session_id,
                event.index,
                len(self._transcript),
            )
        assert self.run is not None
        self.store.append_message(self.session_id, event.message, run=self.run)
        self._transcript.append(event.message)

    def _replace(self, messages: Sequence[Message]) -> None:
        assert self.run is not None
        self.store.set_transcript(self.session_id, messages, run=self.run)
        self._transcript = list(messages)

    def _reconcile(self, messages: Sequence[Message]) -> None:
        """The consistency check at the end: the loop's transcript is the recorded one."""
        if list(messages) == self._transcript:
            return
        logger.warning(
            "session %s: the finished run's transcript (%d messages) differs from the"
            " one recorded as it went (%d messages); storing the run's",
            self.session_id,
            len(messages),
            len(self._transcript),
        )
        self._replace(messages)

    # -- run and iterations --------------------------------------------------------------

    def _run_started(self, event: RunStarted) -> None:
        if self.run is not None:
            return
        self._transcript = self.store.messages(self.session_id)
        self.run = self.store.begin_run(
            self.session_id, prompt=event.prompt, model=self._model, owner=self._owner
        )
        self._origin = event.at

    def _iteration_started(self, event: IterationStarted) -> None:
        self._iteration = event.iteration
        self._calls, self._discarded, self._attempts = {}, {}, {}

    def _run_finished(self, event: RunFinished) -> None:
        assert self.run is not None
        if event.messages:
            self._reconcile(event.messages)
        self.finished = True
        outcome = RunOutcome(
            RunState.FINISHED,
            reason=event.reason,
            detail=event.detail,
            usage=event.usage,
            cost=event.cost,
        )
        self.store.finish_run(self.session_id, self.run, outcome)

    # -- model calls -----------------------------------------------------------------------

    def _model_started(self, event: ModelCallStarted) -> None:
        assert self.run is not None
        self._model_call = ModelCallRecord(
            session_id=self.session_id,
            run=self.run,
            iteration=event.iteration,
            model=event.model,
            started_at=self._rel(event.at),
        )
        self.store.put_model_call(self._model_call)

    def _first_chunk(self, at: float) -> None:
        current = self._model_call
        if current is not None and current.first_chunk_at is None:
            self._model_call = dataclasses.replace(
                current, first_chunk_at=self._rel(at)
            )
            self.store.put_model_call(self._model_call)

    def _model_finished(self, event: ModelCallFinished) -> None:
        assert self.run is not None
        response = event.response
        if self._model_call is not None:
            self._model_call = dataclasses.replace(
                self._model_call,
                finished_at=self._rel(event.at),
                stop_reason=response.stop_reason.value,
                usage=response.usage,
            )
            self.store.put_model_call(self._model_call)
        self._usage = self._usage + response.usage
        if self._price is not None:
            self._cost += self._price(response.model or self._model, response.usage)
        self.store.update_run_usage(self.session_id, self.run, self._usage, self._cost)
        self._settle_response_calls(response.tool_calls)

    def _settle_response_calls(self, calls: tuple[ToolCall, ...]) -> None:
        """Give every call of the final response its position; discard dead attempts' calls."""
        refs = {c.ref for c in calls}
        for ref in [r for r in self._calls if r not in refs]:
            self._put(dataclasses.replace(self._calls[ref], state=CallState.DISCARDED))
        for index, call in enumerate(calls):
            record = self._calls.get(call.ref)
            if record is None:
                record = self._new_call(call, index, CallState.PENDING)
            self._put(dataclasses.replace(record, index=index, call=call))

    def _discard_started(self) -> None:
        """A retry voids the dead attempt: its eagerly started calls are DISCARDED.

        They stay known (`_discarded`): one still running reports its running
        and its result later, and the record keeps them.
        """
        for record in list(self._calls.values()):
            if record.state is not CallState.PENDING:
                self._put(dataclasses.replace(record, state=CallState.DISCARDED))

    # -- tool calls ------------------------------------------------------------------------

    def _new_call(self, call: ToolCall, index: int, state: CallState) -> CallRecord:
        assert self.run is not None
        slot = _slot(call)
        attempt = self._attempts.get(slot, 0) + 1
        self._attempts[slot] = attempt
        access = self._describe(call) if self._describe is not None else None
        return CallRecord(
            self.session_id,
            self.run,
            self._iteration,
            call,
            index=index,
            attempt=attempt,
            state=state,
            access=access,
        )

    def _put(self, record: CallRecord) -> None:
        ref = record.call.ref
        if record.state is CallState.DISCARDED:
            live = self._calls.get(ref)
            if live is not None and live.attempt == record.attempt:
                del self._calls[ref]
            self._discarded[ref] = record
        else:
            self._calls[ref] = record
        self.store.put_call(record)

    def _progressed(self, ref: str) -> tuple[CallRecord | None, bool]:
        """The record a call's progress updates, and whether it is a discarded one."""
        record = self._calls.get(ref)
        if record is not None:
            return record, False
        record = self._discarded.get(ref)
        return record, record is not None

    def _call_admitted(self, event: ToolUseStarted) -> None:
        record = self._calls.get(event.call.ref)
        if record is not None and record.state in _STARTED:
            self._put(dataclasses.replace(record, state=CallState.DISCARDED))
            record = None
        if record is None:
            record = self._new_call(event.call, len(self._calls), CallState.PENDING)
        self._put(
            dataclasses.replace(
                record, state=CallState.WAITING, admitted_at=self._rel(event.at)
            )
        )

    def _call_running(self, event: ToolRunning) -> None:
        record, discarded = self._progressed(event.key or event.call_id)
        if record is not None:
            self._put(
                dataclasses.replace(
                    record,
                    state=CallState.DISCARDED if discarded else CallState.RUNNING,
                    running_at=self._rel(event.at),
                )
            )

    def _call_finished(self, event: ToolResultReady) -> None:
        record, discarded = self._progressed(event.call.ref)
        if record is None:
            record = self._new_call(event.call, len(self._calls), CallState.PENDING)
        self._put(
            dataclasses.replace(
                record,
                state=CallState.DISCARDED if discarded else CallState.FINISHED,
                finished_at=self._rel(event.at),
                result=event.result,
            )
        )


def _slot(call: ToolCall) -> str:
    """The call's position across the attempts of one model call.

    A restarted stream keys its calls ``"<iteration>~<attempt>.<position>"``; the
    slot drops the attempt, so the live call at a dead call's position is counted
    as its next attempt (`CallRecord.attempt`).
    """
    if "~" not in call.key:
        return call.ref
    head, position = call.key.rsplit(".", 1)
    return f"{head.split('~', 1)[0]}.{position}"
