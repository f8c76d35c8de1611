"""Driving one run: events to the recorder and the display, Ctrl-C to interrupt or quit."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from .._exceptions import StoreError
from ..events import CompletionReason, Event, RunFinished
from ..loop import Agent, AgentRun
from ..messages import Message
from ..sessions import SessionRecorder
from ._output import RunOutput

__all__ = ["INTERRUPT_NOTE", "DriveResult", "drive_run", "exit_code"]

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


def exit_code(result: DriveResult) -> int:
    """0 for a completed run, 130 for an interrupted or quit one, 1 otherwise."""
    if result.quit or result.finished is None:
        return 130
    reason = result.finished.reason
    if reason is CompletionReason.COMPLETED:
        return 0
    return 130 if reason is CompletionReason.INTERRUPTED else 1


class _Signals:
    def __init__(self) -> None:
        self.interrupted = False
        self.quit = False


async def _watch_sigint(
    run: AgentRun, output: RunOutput, outer: anyio.CancelScope, state: _Signals
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
                outer.cancel()
                return


def _record(
    recorder: SessionRecorder | None, event: Event, output: RunOutput
) -> SessionRecorder | None:
    if recorder is None:
        return None
    try:
        recorder.record(event)
    except StoreError as exc:
        output.note(f"session recording failed, the run goes on unrecorded: {exc}")
        return None
    return recorder


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

    Each event is recorded before it is shown, so whatever a viewer (or a
    ``--json`` consumer) has seen is already durable. With `handle_signals`,
    Ctrl-C (SIGINT) interrupts the run and a second one quits; a quit run is
    recorded as abandoned. A store failure is shown and the run continues
    unrecorded.
    """
    state = _Signals()
    finished: RunFinished | None = None
    with anyio.CancelScope() as outer:
        async with (
            agent.open_run(prompt, history=history) as run,
            anyio.create_task_group() as tg,
        ):
            if handle_signals:
                tg.start_soon(_watch_sigint, run, output, outer, state)
            events = run.events()
            try:
                async with output.running():
                    async for event in events:
                        recorder = _record(recorder, event, output)
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
    if finished is None and recorder is not None:
        try:
            recorder.abandon("the user quit before the run finished")
        except StoreError as exc:
            output.note(f"could not record the quit: {exc}")
    return DriveResult(finished, quit=state.quit)
