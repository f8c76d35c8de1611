"""Driving one run: events to the recorder and the display; signals to interrupt or quit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio

from .._exceptions import StoreError
from ..events import CompletionReason, Event, RunFinished
from ..loop import Agent
from ..messages import Message
from ..sessions import SessionRecorder
from ._output import RunOutput
from ._signals import INTERRUPT_NOTE, Stops, StopWatch

__all__ = ["INTERRUPT_NOTE", "DriveResult", "drive_run", "exit_code"]


@dataclass(frozen=True, slots=True)
class DriveResult:
    """How a driven run ended."""

    finished: RunFinished | None
    """The run's last event; None if the user quit before it."""
    quit: bool = False
    """True if a second signal ended it."""
    stops: Stops = field(default_factory=Stops)
    """The signals (or the closed output) that stopped it from outside."""


def exit_code(result: DriveResult) -> int:
    """The exit status: 0 completed, 128 + the signal or 141 stopped, else 1.

    130 for Ctrl-C, 143 SIGTERM, 129 SIGHUP; 141 when the output was closed
    (see `Stops.exit_code`).
    """
    finished = result.finished
    reason = None if finished is None else finished.reason
    return result.stops.exit_code(
        completed=reason is CompletionReason.COMPLETED,
        interrupted=finished is None or reason is CompletionReason.INTERRUPTED,
    )


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
    stops: StopWatch | None = None,
) -> DriveResult:
    """Run `agent` on `prompt`, recording and showing every event. A checkpoint.

    Each event is recorded before it is shown, so whatever a viewer (or a
    ``--json`` consumer) has seen is already durable. Stop signals go to the
    run through `stops` (the command's `StopWatch`), or, with
    `handle_signals`, one of the drive's own: Ctrl-C (SIGINT), SIGTERM or
    SIGHUP interrupts the run and a second signal quits; so does stdout going
    away. A quit run is recorded as abandoned. A store failure is shown and
    the run continues unrecorded.
    """
    own = StopWatch(output) if stops is None and handle_signals else None
    watch = stops or own
    finished: RunFinished | None = None
    with anyio.CancelScope() as outer:
        async with (
            agent.open_run(prompt, history=history) as run,
            anyio.create_task_group() as tg,
        ):
            if own is not None:
                await tg.start(own.serve)
            detach = None if watch is None else watch.attach(run, outer)
            events = run.events()
            try:
                async with output.running():
                    async for event in events:
                        recorder = _record(recorder, event, output)
                        output.handle(event)
                        if isinstance(event, RunFinished):
                            finished = event
            finally:
                if detach is not None:
                    detach()
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
    ended = Stops() if watch is None else watch.stops
    return DriveResult(finished, quit=ended.quit, stops=ended)
