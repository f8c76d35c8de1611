"""Writing batch sessions into a SessionStore, from the driver only."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import final

import anyio
import anyio.to_thread

from ..events import Event
from ..sessions import SessionRecorder, SessionStore
from ._scripted import SCRIPTED_PREFIX
from ._tasks import BatchTask

__all__ = ["StoredSession", "open_stored_session"]


def model_label(spec: str | None) -> str:
    """The model as the store shows it (a script is summarised, not stored whole)."""
    if spec is None:
        return ""
    return "scripted" if spec.startswith(SCRIPTED_PREFIX) else spec


@final
class StoredSession:
    """One batch session in the store: created before it runs, then recorded.

    A local session attaches `recorder` to its run (`run_session`); a remote
    one's events arrive after the fact and are recorded inside `recording`.
    Either way the writes happen off the driver's event loop. Not thread-safe:
    the driver's event-loop thread calls it.
    """

    def __init__(self, recorder: SessionRecorder, *, prompt: str = "") -> None:
        self.recorder = recorder
        """The session's recorder (one run)."""
        self._prompt = prompt

    @property
    def session_id(self) -> str:
        """The store's id of the session (what ``toolweave show`` takes)."""
        return self.recorder.session_id

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
    store: SessionStore, task: BatchTask, model: str | None
) -> StoredSession:
    """Create the session of `task` in `store` (blocking disk I/O, quick)."""
    label = model_label(model)
    info = store.create_session(
        workspace=task.workspace or "",
        model=label,
        title=task.prompt,
        meta={"batch_task_id": task.task_id, "batch_line": task.line},
    )
    return StoredSession(
        SessionRecorder(store, info.id, model=label), prompt=task.prompt
    )
