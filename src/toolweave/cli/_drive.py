"""Driving one run: events to the recorder and the display, Ctrl-C to interrupt or quit."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from .._exceptions import StoreError
from ..events import CompletionReason, RunFinished
from ..loop import Agent, AgentRun
from ..messages import Message
from ..sessions import SessionRecorder
from ._output import RunOutput

__all__ = [
    "INTERRUPT_NOTE",
    "DriveResult",
    "drive_run",
    "exit_code",
    "store_failure_note",
]

INTERRUPT_NOTE = (
    "Interrupting: running calls stop or finish per their interrupt behaviour,"
    " calls not started are answered as not run. Press Ctrl-C again to quit at once."
)


@dataclass(frozen=True, slots=True)
class DriveResult:
    """How a driven run ended."""

    finished: RunFinished | None
    """The run's last event; None if the user quit before it."""
    quit: bool = False
    """True if a second Ctrl-C ended it."""
    store_failure: StoreError | None = None
    """Why the session store could not record the run (all of it), if it could not."""


def exit_code(result: DriveResult) -> int:
    """0 for a completed run, 130 for an interrupted or quit one, 1 otherwise.

    A run the store could not record whole is not a success: 1 (unless quit).
    """
    if result.quit or result.finished is None:
        return 130
    reason = result.finished.reason
    if reason is CompletionReason.COMPLETED and result.store_failure is None:
        return 0
    return 130 if reason is CompletionReason.INTERRUPTED else 1


def store_failure_note(exc: StoreError) -> str:
    """What the user is told when the session store cannot be written."""
    return (
        f"session recording failed: {exc}. The run is stopped rather than go on"
        " unrecorded; calls that had not started were not started."
    )


class _Signals:
    def __init__(self) -> None:
        self.interrupted = False
        self.quit = False


async def _watch_sigint(
    run: AgentRun,
    output: RunOutput,
    outer: anyio.CancelScope,
    state: _Signals,
    recorder: SessionRecorder | None,
) -> None:
    """First Ctrl-C interrupts the run (it ends cleanly, resumable); the second quits."""
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            if not state.interrupted:
                state.interrupted = True
                run.interrupt()
                output.note(INTERRUPT_NOTE)
            else:
                state.quit = True
                if recorder is not None:  # recorded as it stands now, nothing after
                    recorder.abandon("the user quit before the run finished")
                outer.cancel()
                return


async def drive_run(
    agent: Agent,
    prompt: str,
    *,
    history: Sequence[Message] = (),
    recorder: SessionRecorder | None,
    output: RunOutput,
    handle_signals: bool = False,
) -> DriveResult:
    """Run `agent` on `prompt`, recording and showing every event. A checkpoint.

    The recorder is attached to the run (`Agent.open_run`): it is fed every
    event in order, writes off the event loop, and holds each tool call until
    its start is durable. Each event is shown only once it is durable, so
    whatever a viewer (or a ``--json`` consumer) has seen is on disk. If the
    store cannot be written the run ends as ERROR saying so (a note says it at
    once) instead of going on unrecorded. With `handle_signals`, Ctrl-C
    (SIGINT) interrupts the run and a second one quits; a quit run is recorded
    as abandoned where it stood.

    Raises:
        SessionBusyError: another live owner holds the session (nothing ran).
        StoreError: the store could not be opened for the run (nothing ran).
    """
    state = _Signals()
    finished: RunFinished | None = None
    noted = False
    with anyio.CancelScope() as outer:
        async with (
            agent.open_run(prompt, history=history, recorder=recorder) as run,
            anyio.create_task_group() as tg,
        ):
            if handle_signals:
                tg.start_soon(_watch_sigint, run, output, outer, state, recorder)
            events = run.events()
            shown = 0
            try:
                async with output.running():
                    async for event in events:
                        shown += 1
                        if recorder is not None:
                            await recorder.wait_durable(shown)
                            if recorder.failure is not None and not noted:
                                noted = True
                                output.note(store_failure_note(recorder.failure))
                        output.handle(event)
                        if isinstance(event, RunFinished):
                            finished = event
            finally:
                close = getattr(
                    events, "aclose", None
                )  # an async generator: close it now
                if close is not None:
                    await close()
            tg.cancel_scope.cancel()
    failure = recorder.failure if recorder is not None else None
    if failure is not None and not noted:  # it failed only as the run's end was written
        output.note(
            f"session recording failed: {failure}. The run ended, but the store does"
            " not hold all of it; resume answers what it lacks as outcome unknown."
        )
    return DriveResult(finished, quit=state.quit, store_failure=failure)
