"""Writing batch sessions into a SessionStore, from the driver only; resuming them."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import final

import anyio
import anyio.to_thread

from .._exceptions import StoreError
from ..events import CompletionReason, Event, FileRead
from ..messages import Message
from ..sessions import (
    RunInfo,
    RunState,
    SessionRecorder,
    SessionStore,
    prepare_resume,
)
from ._journal import BatchJournal
from ._scripted import SCRIPTED_PREFIX
from ._tasks import BatchTask

__all__ = ["Resumption", "StoredSession", "open_stored_session"]


def model_label(spec: str | None) -> str:
    """The model as the store shows it (a script is summarised, not stored whole)."""
    if spec is None:
        return ""
    return "scripted" if spec.startswith(SCRIPTED_PREFIX) else spec


@dataclass(frozen=True, slots=True)
class Resumption:
    """How a batch session continues from the store (`prepare_resume`'s plan).

    Sent to a Ray worker with the task, so it must pickle.
    """

    history: tuple[Message, ...]
    """The stored transcript, every call answered (finished calls keep their results)."""
    prompt: str
    """What the resumed run starts with."""
    read_files: tuple[FileRead, ...] = ()
    """The session's read ledger, restored so read-before-edit knows those files."""
    lost: int = 0
    """Calls answered "interrupted, outcome unknown" (they may have run; not run again)."""
    skipped: int = 0
    """Calls answered "not run" (known never to have started)."""

    @property
    def model_turns(self) -> int:
        """Model responses already in the history (a script carries on after them)."""
        return sum(1 for m in self.history if m.role == "assistant")


@final
class StoredSession:
    """One batch session in the store: created (or found again) before it runs, then recorded.

    A local session attaches `recorder` to its run (`run_session`); a remote
    one's events arrive after the fact and are recorded inside `recording`.
    Either way the writes happen off the driver's event loop. Not thread-safe:
    the driver's event-loop thread calls it.
    """

    def __init__(
        self,
        recorder: SessionRecorder,
        *,
        prompt: str = "",
        resumption: Resumption | None = None,
        concluded: RunInfo | None = None,
        output: str = "",
        next_run: int = 1,
    ) -> None:
        self.recorder = recorder
        """The session's recorder (one run)."""
        self.resumption = resumption
        """Set when the session continues an earlier, unfinished run of this task."""
        self.concluded = concluded
        """Set when the task's session had already ended (its driver died before
        writing the result line): no run follows, the line is written from this."""
        self.output = output
        """A concluded session's final text."""
        self.next_run = next_run
        """The number the session's next run gets in the store."""
        self._prompt = prompt

    @property
    def session_id(self) -> str:
        """The store's id of the session (what ``toolweave show`` takes)."""
        return self.recorder.session_id

    @property
    def call_scope(self) -> str:
        """``<session id>/<next run>``: the idempotency-key scope of the run to come."""
        return f"{self.session_id}/{self.next_run}"

    def recording(self) -> AbstractAsyncContextManager[SessionRecorder]:
        """Record the events given to `record` off the loop (a remote session)."""
        return self.recorder.recording()

    def record(self, event: Event) -> None:
        """Record the session's next event (inside `recording`).

        Raises:
            StoreError: the store could not be written (the session must stop).
        """
        self.recorder.record(event)
        if self.recorder.failure is not None:
            raise self.recorder.failure

    def abandon(self, reason: str) -> None:
        """Record that the session ended without finishing (crash, lost worker).

        Blocking (disk I/O) when no recording is open: call it from a worker
        thread (`abandon_off_loop`).
        """
        self.recorder.abandon(reason, prompt=self._prompt)

    async def abandon_off_loop(self, reason: str) -> None:
        """`abandon`, off the event loop (a session whose run never began)."""
        await anyio.to_thread.run_sync(self.abandon, reason)


def open_stored_session(
    store: SessionStore,
    task: BatchTask,
    model: str | None,
    journal: BatchJournal | None = None,
    *,
    reported: bool = False,
) -> StoredSession:
    """The session of `task` in `store`: found again through `journal`, else created.

    Blocking disk I/O. A task the journal already links to a session gets that
    session back, never a second one: resumed with `prepare_resume` (finished
    calls keep their results, the interrupted ones are answered "outcome
    unknown" or "not run", nothing is run again; its lease is taken for the
    resumed run), run from its prompt if it never got past its start, or, if it
    had ended but its result line was never written (`reported` False),
    returned `concluded`. A run the batch's own interruption cut (ABANDONED,
    or FINISHED as INTERRUPTED when the cancel reached the loop first) did not
    end the session: it is resumed. A new session is linked in the journal (fsynced)
    before it runs.

    Raises:
        SessionBusyError: another live process runs the task's session.
        StoreError: the store failed, or the session cannot be continued.
    """
    label = model_label(model)
    known = journal.session_of(task.task_id) if journal is not None else None
    if known is not None:
        found = _reopen(store, known, task, label, reported=reported)
        if found is not None:
            return found
    info = store.create_session(
        workspace=task.workspace or "",
        model=label,
        title=task.prompt,
        meta={"batch_task_id": task.task_id, "batch_line": task.line},
    )
    if journal is not None:
        journal.link(task.task_id, info.id)
    return StoredSession(
        SessionRecorder(store, info.id, model=label), prompt=task.prompt
    )


def _ended(run: RunInfo | None) -> bool:
    """Whether `run` ended the session's work (a run cut by the batch's own stop did not)."""
    return (
        run is not None
        and run.state is RunState.FINISHED
        and run.reason is not CompletionReason.INTERRUPTED
    )


def _reopen(
    store: SessionStore, session_id: str, task: BatchTask, label: str, *, reported: bool
) -> StoredSession | None:
    """`task`'s earlier session, ready to go on; None if the store does not have it."""
    try:
        info = store.find_session(session_id)
    except StoreError:
        return None  # another store than the journal's: a session of its own here
    runs = store.runs(info.id)
    next_run = max((r.run for r in runs), default=0) + 1
    fresh = StoredSession(
        SessionRecorder(store, info.id, model=label),
        prompt=task.prompt,
        next_run=next_run,
    )
    if info.messages == 0:
        return fresh  # it never got past its start: run it from its prompt
    last = runs[-1] if runs else None
    if _ended(last) and not reported:
        assert last is not None
        messages = store.messages(info.id)
        output = next((m.text for m in reversed(messages) if m.role == "assistant"), "")
        return StoredSession(
            fresh.recorder, prompt=task.prompt, concluded=last, output=output
        )
    plan = prepare_resume(store, info.id)
    resumption = Resumption(
        plan.history,
        plan.prompt,
        plan.read_files,
        lost=len(plan.lost),
        skipped=len(plan.skipped),
    )
    recorder = SessionRecorder(store, info.id, model=label, lease=plan.lease)
    return StoredSession(
        recorder, prompt=task.prompt, resumption=resumption, next_run=next_run
    )
