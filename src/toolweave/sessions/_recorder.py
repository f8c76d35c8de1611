"""SessionRecorder: writes a run to a SessionStore as its events arrive."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, final

import anyio
import anyio.to_thread

from .._exceptions import StoreError, UsageError
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
from ._lease import SessionLease
from ._owner import current_owner
from ._recording import Recording
from ._records import AccessRecord, CallRecord, CallState, ModelCallRecord, RunState
from ._store import RunOutcome, SessionStore
from ._writer import StoreWriter

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

    Two ways to feed it:

    * **Attached** (`recording`, which `Agent.open_run(..., recorder=...)` and
      the CLI use): the loop hands it every event as it is emitted; the writes
      go through a `StoreWriter`, in order, on a worker thread, batched into as
      few transactions as the store's speed allows, so the event loop never
      waits for the disk. With ``write_ahead`` the run awaits `before_start`
      before each tool starts: the call's RUNNING row is durable before its
      code runs, so a call the store holds as not started really never started
      (`RunInfo.write_ahead`; resume then answers it "not run"). A store that
      cannot be written (its bounded wait for a lock ran out, a full disk) stops
      the recording for good (`failure`) and calls ``on_failure`` once, so the
      run can end honestly instead of running on unrecorded; a call waiting at
      the barrier is then refused (it did not start).
    * **Fed by hand** (`record` outside `recording`): each write is made at
      once, blocking the caller. Nothing is known about calls the recorder was
      not told about yet, so resume answers every call without a result
      "interrupted, outcome unknown".

    Either way a process killed mid-run leaves everything up to the last
    durable write: the transcript exactly as the loop holds it (each
    `MessageAppended` is appended, each `TranscriptReplaced` becomes the live
    transcript, the replaced messages archived, never deleted), each tool
    call's progress (admitted, running, finished with its result), model-call
    intervals, usage, and the events themselves (text deltas excepted: the text
    is in the messages). `RunFinished` only checks that the transcript it
    carries equals the recorded one; if not, a warning is logged and the carried
    transcript is stored.

    One live owner: the run holds the session's lease (`SessionLease`) from its
    start (taken then, unless one is handed in, e.g. from `prepare_resume`),
    renewed while it lives and released at its end. A second process's run of
    the same session is refused with `SessionBusyError`.

    Calls are known by their `ToolCall.ref` (the loop's position key), never by
    the provider's id alone: models repeat ids within a response and across turns.
    A call of a streaming attempt that was thrown away (a retry) is DISCARDED,
    and keeps being updated as it goes on: it may run, or be running, all the
    same, and its `running_at` and result then say so.

    Works with any loop that emits the `toolweave.events` protocol. Not
    thread-safe: use it from the event loop's thread (fed by hand: from the task
    that consumes the events). Fed by hand, `record` raises `StoreError` when
    the store fails; attached, it never raises.

    Args:
        store: Where to write.
        session_id: The session the run belongs to (created beforehand).
        model: The model spec, recorded with the run.
        describe: The access each call declares. Optional: a call admitted by
            the scheduler carries the access it was scheduled by
            (`ToolUseStarted.reads`/`writes`), which is recorded in its place;
            `describe` covers the calls the scheduler did not classify (a call
            run alone, concurrency off). With neither, the access is not known,
            and the timeline's lower bound counts the call as independent.
        price: USD of a model call's usage, to keep a crashed run's cost; the
            run's own total replaces it when the run finishes.
        owner: ``host:pid`` recorded as the run's owner and its lease holder
            (default: this process); a run whose owner is gone reads as crashed.
        lease: The session's lease, already held (`prepare_resume` takes one);
            None = the one `prepare_resume` just took for this session in this
            process, if any, else taken when the run starts.
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
        lease: SessionLease | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.run: int | None = None
        """The run number, once `RunStarted` was recorded."""
        self.finished = False
        """True once the run's end (or abandonment) was recorded (or queued)."""
        self.failure: StoreError | None = None
        """Why the store could not be written, once that happened (attached only)."""
        self.lease = lease
        """The session's lease while the run holds it."""
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
        self._live: Recording | None = None
        self._next_run = 0
        self._on_failure: Callable[[StoreError], None] | None = None
        self._end: RunOutcome | None = None
        self._renewed = 0.0

    @property
    def run_number(self) -> int | None:
        """The run's number in its session, None before it is known.

        `run` once begun, else (inside `recording`) the number it will get.
        """
        if self.run is not None:
            return self.run
        return self._next_run or None

    # -- entry points ------------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Write what `event` changes. Call once per event, in order."""
        live = self._live
        if live is None:
            self._keep_lease()
            self._record(event)
            return
        try:
            self._record(event)
        except Exception as exc:  # attached: the run must never see it raise
            logger.exception("session %s: recording failed", self.session_id)
            self._failed(StoreError(f"recording failed: {exc!r}"))
        live.mark()

    def _record(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._run_started(event)
        if self.run is None or self.finished:
            return
        if not isinstance(event, _NOT_STORED):
            kind = type(event).__name__
            self._do(
                self.store.append_event,
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
        reads as abandoned rather than new. Nothing of the run is recorded after
        it (attached: a call reaching the start barrier is refused). Idempotent;
        does nothing after `RunFinished`.
        """
        if self.finished:
            return
        if self.run is None:
            self._begin(prompt)
        assert self.run is not None
        self.finished = True
        outcome = RunOutcome(
            RunState.ABANDONED, detail=detail, usage=self._usage, cost=self._cost
        )
        self._end = outcome
        self._do(self.store.finish_run, self.session_id, self.run, outcome)
        if self._live is None:
            self._release_lease()

    # -- attached ----------------------------------------------------------------------

    @asynccontextmanager
    async def recording(
        self,
        *,
        write_ahead: bool = False,
        on_failure: Callable[[StoreError], None] | None = None,
    ) -> AsyncIterator[SessionRecorder]:
        """Record the run fed to `record` inside this block off the event loop.

        On entry (in a worker thread) the session's lease is taken (or the one
        handed in is renewed) and the stored transcript read; `SessionBusyError`
        or `StoreError` is raised then, before anything of the run is written.
        Inside, `record` only queues; `before_start` is the start barrier when
        `write_ahead` is set (`Agent.open_run` sets it). On exit everything
        queued is written (shielded from cancellation: at most the store's
        bounded wait), a run that did not finish is recorded as abandoned, and
        the lease is released. If the store failed, the run's end is tried once
        more, as abandoned with the reason, and `failure` holds the error; it is
        not raised (the caller decides: the CLI reports it and exits non-zero).

        Raises:
            UsageError: already recording, or this recorder already recorded a run.
            SessionBusyError: another live owner holds the session.
            StoreError: the store could not be read or written on entry.
        """
        if self._live is not None or self.run is not None or self.finished:
            raise UsageError("a SessionRecorder records one run, once")
        lease, transcript, next_run = await anyio.to_thread.run_sync(self._prepare)
        live: Recording | None = None

        def committed(durable: int) -> None:
            if live is not None:
                live.committed(durable)

        writer = StoreWriter(self.store, on_failure=self._failed, on_commit=committed)
        live = Recording(writer, lease, write_ahead=write_ahead)
        self.lease, self._transcript, self._next_run = lease, transcript, next_run
        self._on_failure = on_failure
        self._live = live
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.pump)
                beat = anyio.CancelScope()
                tg.start_soon(live.heartbeat, beat)
                try:
                    yield self
                finally:
                    beat.cancel()  # no renewal after the release below
                    with anyio.CancelScope(shield=True):
                        try:
                            await self._close(live)
                        finally:
                            await writer.close()  # the pump ends only so
                    tg.cancel_scope.cancel()
        finally:
            self._live = None
            self._on_failure = None

    async def _close(self, live: Recording) -> None:
        """End the recording: an unfinished run is abandoned, then everything is written."""
        if self.run is not None and not self.finished:
            self.abandon("the recording ended before the run finished")
        await live.close(self._last_words if self.run is not None else None)

    async def before_start(self, call: ToolCall) -> str | None:
        """The start barrier: None once `call`'s start is durable, else why it must not start.

        Attached with ``write_ahead`` only (otherwise None at once). Writes the
        call as RUNNING and waits until that is committed, off the event loop; a
        lock is waited for within the store's bound. If the store fails first,
        or the run's recording already ended (abandoned), the call is refused:
        the returned reason is its truthful answer, it did not start.
        """
        live = self._live
        if live is None or not live.write_ahead or self.run is None:
            return None
        if self.failure is None and not self.finished:
            record, discarded = self._progressed(call.ref)
            if record is None:
                record = self._new_call(call, len(self._calls), CallState.PENDING)
            state = CallState.DISCARDED if discarded else CallState.RUNNING
            now = self._rel(anyio.current_time())
            self._put(dataclasses.replace(record, state=state, running_at=now))
            if await live.writer.wait(live.writer.submitted):
                return None
        if self.failure is not None:
            return (
                "the session store could not record that this call was starting, so"
                f" it was never started ({self.failure})"
            )
        return "the session's recording had ended (the run was abandoned), so it was never started"

    async def wait_durable(self, events: int) -> None:
        """Wait until the first `events` events given to `record` are durable.

        What a consumer that shows events calls before showing the `events`-th,
        so whatever it has shown is already on disk. Returns at once when not
        attached, and when the store failed (see `failure`).
        """
        live = self._live
        if live is not None:
            await live.wait_events(events)

    async def flush(self) -> None:
        """Wait until everything recorded so far is durable (or the store failed).

        Returns at once when not attached (writes are made as they come then).
        """
        live = self._live
        if live is not None:
            await live.writer.wait(live.writer.submitted)

    # -- plumbing -------------------------------------------------------------------------

    def _do(self, write: Callable[..., object], /, *args: Any, **kwargs: Any) -> None:
        """One store write: queued when attached, else made now (blocking)."""
        live = self._live
        if live is None:
            write(*args, **kwargs)
        else:
            live.submit(partial(write, *args, **kwargs))

    def _failed(self, exc: StoreError) -> None:
        if self.failure is not None:
            return
        self.failure = exc  # reported by the run's end (on_failure), not logged twice
        if self._on_failure is not None:
            self._on_failure(exc)

    def _prepare(self) -> tuple[SessionLease, list[Message], int]:
        """Blocking: hold the lease, read the stored transcript and the next run number."""
        held = self._held_lease()
        lease = held or SessionLease.acquire(
            self.store, self.session_id, owner=self._owner
        )
        try:
            if held is not None:
                held.renew()
            transcript = self.store.messages(self.session_id)
            runs = self.store.runs(self.session_id)
        except BaseException:
            if held is None:
                with contextlib.suppress(StoreError):
                    lease.release()
            raise
        return lease, transcript, max((r.run for r in runs), default=0) + 1

    def _begin(self, prompt: str) -> None:
        """Open the run in the store (queued when attached: its number is known)."""
        live = self._live
        if live is None:
            self._hold_lease()
            self.run = self.store.begin_run(
                self.session_id, prompt=prompt, model=self._model, owner=self._owner
            )
            return
        self.run = self._next_run
        live.submit(partial(self._begin_numbered, prompt, self._next_run, live))

    def _begin_numbered(self, prompt: str, expected: int, live: Recording) -> None:
        run = self.store.begin_run(
            self.session_id,
            prompt=prompt,
            model=self._model,
            owner=self._owner,
            write_ahead=live.write_ahead,
        )
        if run != expected:
            raise StoreError(
                f"session {self.session_id[:12]}: run {run} was begun where run"
                f" {expected} was expected (written by another process?)"
            )

    def _last_words(self) -> None:
        """Blocking, after a failure: record how the run ended, as far as it is known."""
        assert self.run is not None
        end = self._end
        ended = (
            f"the run ended as {end.reason.value if end.reason else end.state.value}"
            + (f" ({end.detail})" if end.detail else "")
            if end is not None
            else "the run's end is unknown"
        )
        outcome = RunOutcome(
            RunState.ABANDONED,
            detail=f"the session store failed while recording this run, so the record"
            f" stops there ({self.failure}); {ended}",
            usage=end.usage if end is not None else self._usage,
            cost=end.cost if end is not None else self._cost,
        )
        self.store.finish_run(self.session_id, self.run, outcome)

    # -- the lease when fed by hand --------------------------------------------------------

    def _held_lease(self) -> SessionLease | None:
        """The lease handed in, or the one `prepare_resume` left for this session."""
        if self.lease is not None:
            self.lease.claimed()
            return self.lease
        return SessionLease.take_over(self.store, self.session_id)

    def _hold_lease(self) -> None:
        held = self._held_lease()
        if held is None:
            self.lease = SessionLease.acquire(
                self.store, self.session_id, owner=self._owner
            )
        else:
            held.renew()
            self.lease = held
        self._renewed = time.time()

    def _keep_lease(self) -> None:
        lease = self.lease
        if (
            lease is not None
            and not lease.released
            and not self.finished
            and time.time() - self._renewed > lease.term / 4
        ):
            lease.renew()
            self._renewed = time.time()

    def _release_lease(self) -> None:
        if self.lease is not None:
            self.lease.release()

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
        self._do(
            self.store.append_message, self.session_id, event.message, run=self.run
        )
        self._transcript.append(event.message)

    def _replace(self, messages: Sequence[Message]) -> None:
        assert self.run is not None
        self._do(self.store.set_transcript, self.session_id, messages, run=self.run)
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
        if self.run is not None or self.finished:
            return
        if self._live is None:
            self._transcript = self.store.messages(self.session_id)
        self._begin(event.prompt)
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
        self._end = outcome
        self._do(self.store.finish_run, self.session_id, self.run, outcome)
        if self._live is None:
            self._release_lease()

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
        self._do(self.store.put_model_call, self._model_call)

    def _first_chunk(self, at: float) -> None:
        current = self._model_call
        if current is not None and current.first_chunk_at is None:
            self._model_call = dataclasses.replace(
                current, first_chunk_at=self._rel(at)
            )
            self._do(self.store.put_model_call, self._model_call)

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
            self._do(self.store.put_model_call, self._model_call)
        self._usage = self._usage + response.usage
        if self._price is not None:
            self._cost += self._price(response.model or self._model, response.usage)
        self._do(
            self.store.update_run_usage,
            self.session_id,
            self.run,
            self._usage,
            self._cost,
        )
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
        self._do(self.store.put_call, record)

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
        access = record.access
        if event.reads is not None and event.writes is not None:
            access = AccessRecord(event.reads, event.writes)  # what it was scheduled by
        self._put(
            dataclasses.replace(
                record,
                state=CallState.WAITING,
                admitted_at=self._rel(event.at),
                access=access,
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
