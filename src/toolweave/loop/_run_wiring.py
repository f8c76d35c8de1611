"""How `Agent.open_run` wires a run: its event emitter, store-failure stop and history."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from .._exceptions import StoreError, UsageError
from ..events import CompletionReason, Event
from ..messages import Message
from ..sessions import SessionRecorder
from ._control import RunControl
from ._suspended import Resumption
from ._transcript import transcript_problems

__all__ = ["abandoned_because", "emitter", "history_for", "stopper"]


def emitter(
    send: MemoryObjectSendStream[Event], recorder: SessionRecorder | None
) -> Callable[[Event], None]:
    if recorder is None:

        def emit(event: Event) -> None:
            try:  # noqa: SIM105 - the hot path; suppress() costs a context manager per event
                send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # nobody listens any more; the run still ends cleanly

        return emit
    record = recorder.record

    def emit_recorded(event: Event) -> None:
        record(event)  # queued, in order, before anyone can see the event
        try:  # noqa: SIM105 - the hot path
            send.send_nowait(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    return emit_recorded


def stopper(control: RunControl) -> Callable[[StoreError], None]:
    def stop(exc: StoreError) -> None:
        control.stop(
            CompletionReason.ERROR,
            "the session store could not be written, so the run was stopped rather"
            f" than go on unrecorded: {exc}",
        )

    return stop


def abandoned_because(exc: BaseException) -> str:
    """Why a recorded run was abandoned: its caller left the block by `exc`."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "the run was cancelled before it finished"
    return f"the run's consumer failed before the run finished ({type(exc).__name__})"


def history_for(
    history: Sequence[Message], resume: Resumption | None, *, claim: bool
) -> Sequence[Message]:
    """The history a run starts from: checked, or a resumed suspension's.

    `claim`: take the suspension now (with a recorder it is taken once the
    session's lease is held, so a busy session leaves it resumable).
    """
    if resume is not None:
        if claim:
            resume.suspension.claim()
        return resume.suspension.messages  # checked by `resumption`
    problems = transcript_problems(history)
    if problems:
        raise UsageError("history is not a valid transcript: " + "; ".join(problems))
    return history
