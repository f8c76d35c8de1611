"""Driving one run: events to the recorder and the display; signals to interrupt or quit."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

import anyio

from .._exceptions import StoreError
from ..events import CompletionReason, RunFinished, RunSuspended
from ..loop import Agent, AgentRun
from ..messages import Message
from ..sessions import SessionRecorder, Suspension
from ._output import RunOutput
from ._signals import INTERRUPT_NOTE, Stops, StopWatch

__all__ = [
    "INTERRUPT_NOTE",
    "SUSPENDED_EXIT",
    "DriveResult",
    "drive_run",
    "exit_code",
    "store_failure_note",
]


@dataclass(frozen=True, slots=True)
class DriveResult:
    """How a driven run ended."""

    finished: RunFinished | None
    """The run's last event; None if the user quit before it."""
    quit: bool = False
    """True if a second signal ended it."""
    stops: Stops = field(default_factory=Stops)
    """The signals (or the closed output) that stopped it from outside."""
    store_failure: StoreError | None = None
    """Why the session store could not record the run (all of it), if it could not."""
    suspended: RunSuspended | None = None
    """What waits for a person's decision, if the run suspended."""


SUSPENDED_EXIT = 3
"""The exit status of a run that suspended for a person's decision (not a failure)."""


def exit_code(result: DriveResult) -> int:
    """The exit status: 0 completed, 3 suspended, 128 + the signal or 141 stopped, else 1.

    130 for Ctrl-C, 143 SIGTERM, 129 SIGHUP; 141 when the output was closed
    (see `Stops.exit_code`). A run the store could not record whole is not a
    success: 1 (unless a signal stopped it).
    """
    finished = result.finished
    reason = None if finished is None else finished.reason
    if (
        reason is CompletionReason.SUSPENDED
        and result.store_failure is None
        and not result.stops.quit
        and result.stops.signal is None
    ):
        return SUSPENDED_EXIT
    return result.stops.exit_code(
        completed=reason is CompletionReason.COMPLETED and result.store_failure is None,
        interrupted=finished is None or reason is CompletionReason.INTERRUPTED,
    )


def store_failure_note(exc: StoreError) -> str:
    """What the user is told when the session store cannot be written."""
    return (
        f"session recording failed: {exc}. The run is stopped rather than go on"
        " unrecorded; calls that had not started were not started."
    )


def _abandoner(
    recorder: SessionRecorder | None, output: RunOutput
) -> Callable[[], None] | None:
    """Record a quit run as abandoned where it stands (nothing of it after)."""
    if recorder is None:
        return None

    def abandon() -> None:
        try:
            recorder.abandon("the user quit before the run finished")
        except StoreError as exc:
            output.note(f"could not record the quit: {exc}")

    return abandon


def _opened(
    agent: Agent,
    prompt: str,
    history: Sequence[Message],
    recorder: SessionRecorder | None,
    resume: tuple[Suspension, Mapping[str, str]] | None,
) -> AbstractAsyncContextManager[AgentRun]:
    """The run to drive: a new one, or a suspended one resumed with decisions."""
    if resume is None:
        return agent.open_run(prompt, history=history, recorder=recorder)
    return agent.open_resume(*resume, recorder=recorder)


async def drive_run(
    agent: Agent,
    prompt: str,
    *,
    history: Sequence[Message] = (),
    recorder: SessionRecorder | None,
    output: RunOutput,
    handle_signals: bool = False,
    stops: StopWatch | None = None,
    resume: tuple[Suspension, Mapping[str, str]] | None = None,
) -> DriveResult:
    """Run `agent` on `prompt`, recording and showing every event. A checkpoint.

    The recorder is attached to the run (`Agent.open_run`): it is fed every
    event in order, writes off the event loop, and holds each tool call until
    its start is durable. Each event is shown only once it is durable, so
    whatever a viewer (or a ``--json`` consumer) has seen is on disk. If the
    store cannot be written the run ends as ERROR saying so (a note says it at
    once) instead of going on unrecorded.

    Stop signals go to the run through `stops` (the command's `StopWatch`),
    or, with `handle_signals`, one of the drive's own: Ctrl-C (SIGINT),
    SIGTERM or SIGHUP interrupts the run and a second signal quits; so does
    stdout going away. A quit run is recorded as abandoned where it stood.

    `resume`: a suspended run and the decisions to continue it with (then
    `prompt` and `history` are not used: `Agent.open_resume`).

    Raises:
        SessionBusyError: another live owner holds the session (nothing ran).
        StoreError: the store could not be opened for the run (nothing ran).
    """
    own = StopWatch(output) if stops is None and handle_signals else None
    watch = stops or own
    abandon = _abandoner(recorder, output)
    ends: list[RunFinished | RunSuspended] = []
    noted = False
    with anyio.CancelScope() as outer:
        opened = _opened(agent, prompt, history, recorder, resume)
        async with opened as run, anyio.create_task_group() as tg:
            if own is not None:
                await tg.start(own.serve)
            detach = (
                None if watch is None else watch.attach(run, outer, on_quit=abandon)
            )
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
                        if isinstance(event, RunFinished | RunSuspended):
                            ends.append(event)
            finally:
                if detach is not None:
                    detach()
                close = getattr(
                    events, "aclose", None
                )  # an async generator: close it now
                if close is not None:
                    await close()
            tg.cancel_scope.cancel()
    finished = next((e for e in ends if isinstance(e, RunFinished)), None)
    suspended = next((e for e in ends if isinstance(e, RunSuspended)), None)
    if finished is None and abandon is not None:
        abandon()  # idempotent: a quit already recorded it
    failure = recorder.failure if recorder is not None else None
    if failure is not None and not noted:  # it failed only as the run's end was written
        output.note(
            f"session recording failed: {failure}. The run ended, but the store does"
            " not hold all of it; resume answers what it lacks as outcome unknown."
        )
    ended = Stops() if watch is None else watch.stops
    return DriveResult(
        finished,
        quit=ended.quit,
        stops=ended,
        store_failure=failure,
        suspended=suspended,
    )
