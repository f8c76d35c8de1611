"""Writing batch sessions into a SessionStore, from the driver only."""

from __future__ import annotations

from typing import final

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
    """One batch session in the store: created before it runs, fed its events.

    Not thread-safe: the driver's event-loop thread calls it. Store failures
    raise `StoreError`.
    """

    def __init__(self, recorder: SessionRecorder, *, prompt: str = "") -> None:
        self._recorder = recorder
        self._prompt = prompt

    @property
    def session_id(self) -> str:
        """The store's id of the session (what ``toolweave show`` takes)."""
        return self._recorder.session_id

    def record(self, event: Event) -> None:
        """Write the session's next event."""
        self._recorder.record(event)

    def abandon(self, reason: str) -> None:
        """Record that the session ended without finishing (crash, lost worker)."""
        self._recorder.abandon(reason, prompt=self._prompt)


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
