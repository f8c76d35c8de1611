"""Stopping a CLI run from outside: SIGINT, SIGTERM and SIGHUP all interrupt it as Ctrl-C does.

During a run (`StopWatch`, attached by `drive_run`) the first of these signals
interrupts the run (`AgentRun.interrupt`: every call answered, CANCEL calls
and their process groups stopped, the store finalised, the session
resumable); a second one quits at once (the run is cancelled: children are
still killed on the way out, the run is recorded as abandoned). A consumer
that goes away (stdout closed: `OutputGuard`) interrupts the run the same way.
The exit status says which: 128 + the first signal's number (130 Ctrl-C, 143
SIGTERM, 129 SIGHUP), 141 for a closed output (as a process SIGPIPE had
killed).

Before the run (MCP servers starting) a stop cancels the command's work, so
its clean-up runs; after it, a first stop only sets the exit status. Outside
the event loop (reading settings, printing the epilogue) `entry_signals` makes
them end the process as a `SystemExit` with that status: no traceback.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, final

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel

from ._output_guard import installed_guard

if TYPE_CHECKING:
    from ..loop import AgentRun
    from ._output import RunOutput

__all__ = [
    "INTERRUPT_NOTE",
    "OUTPUT_CLOSED",
    "STOP_SIGNALS",
    "SignalExit",
    "StopWatch",
    "Stops",
    "entry_signals",
]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that interrupt a run."""

OUTPUT_CLOSED = 128 + signal.SIGPIPE
"""The exit status of a run whose output went away (141)."""

INTERRUPT_NOTE = (
    "Interrupting: running calls stop or finish per their interrupt behaviour,"
    " calls not started are answered as not run. Press Ctrl-C again to quit at once."
)
_SIGNAL_NOTE = (
    "Interrupting ({name}): running calls stop or finish per their interrupt"
    " behaviour, calls not started are answered as not run. A second signal quits"
    " at once."
)
_CLOSED_NOTE = (
    "The output was closed: interrupting the run (the session stays resumable)."
)


@dataclass(slots=True)
class Stops:
    """What stopped a driven run from outside, if anything."""

    signal: int | None = None
    """The first stop signal received."""
    quit: bool = False
    """A second signal ended the run at once."""
    output_closed: bool = False
    """stdout went away (a closed pipe, a hung-up terminal)."""

    def exit_code(self, *, completed: bool, interrupted: bool) -> int:
        """The process's exit status for a run that ended as said.

        0 for a completed run (a late signal changes nothing done); for a
        stopped one 128 + the first signal, else 141 for a closed output, else
        130 (an interrupt with neither); 1 for any other ending.
        """
        if completed and not self.quit:
            return 0
        if self.quit or interrupted:
            if self.signal is not None:
                return 128 + self.signal
            return OUTPUT_CLOSED if self.output_closed else 128 + signal.SIGINT
        return 1


def _note(signum: int) -> str:
    if signum == signal.SIGINT:
        return INTERRUPT_NOTE
    return _SIGNAL_NOTE.format(name=signal.Signals(signum).name)


@contextmanager
def _handlers_restored(signums: tuple[int, ...]) -> Iterator[None]:
    """Put back the Python-level handlers (asyncio resets them to the defaults)."""
    saved = {signum: signal.getsignal(signum) for signum in signums}
    try:
        yield
    finally:
        if threading.current_thread() is threading.main_thread():
            for signum, handler in saved.items():
                signal.signal(signum, handler)


@final
class StopWatch:
    """The stop signals of one command's event loop, for its whole life: start, run, shut-down.

    `serve` receives them (start it in a task group; it reports ready once
    the handlers are in place). What a stop does depends on the phase:

    - before a run is attached: the command's work (`scope`) is cancelled:
      nothing ran, clean-up runs (MCP servers are stopped), exit 128 + signal;
      so does stdout going away (exit 141);
    - while a run is attached (`attach`): the first interrupts it, a second
      quits (cancels the drive's scope); stdout going away interrupts it;
    - after the run: the first is only remembered (the shut-down goes on), a
      second cancels the rest.

    Event-loop thread only, except stdout's loss, which may be found on any
    thread and is brought to the loop.
    """

    def __init__(self, output: RunOutput) -> None:
        self.stops = Stops()
        """What stopped the command, for its exit status."""
        self.scope = anyio.CancelScope()
        """The command's work, cancelled by a stop outside the run."""
        self._output = output
        self._run: AgentRun | None = None
        self._outer: anyio.CancelScope | None = None
        self._on_quit: Callable[[], None] | None = None
        self._ran = False

    def attach(
        self,
        run: AgentRun,
        outer: anyio.CancelScope,
        *,
        on_quit: Callable[[], None] | None = None,
    ) -> Callable[[], None]:
        """Route stops to `run` (a quit cancels `outer`) until the returned detach is called.

        `on_quit` runs at a quit just before `outer` is cancelled (the CLI records
        the run as abandoned there, before the cancellation reaches any call).
        """
        self._run, self._outer, self._on_quit = run, outer, on_quit

        def detach() -> None:
            self._run = self._outer = self._on_quit = None
            self._ran = True

        return detach

    def _signalled(self, signum: int) -> None:
        first = self.stops.signal is None
        if first:
            self.stops.signal = signum
        if self._run is not None and self._outer is not None:
            if first:
                self._run.interrupt()
                self._output.note(_note(signum))
            else:
                self.stops.quit = True
                if self._on_quit is not None:
                    self._on_quit()
                self._outer.cancel()
        elif not self._ran or not first:
            self.scope.cancel()  # before the run, or a second signal after it

    def _closed(self) -> None:
        if self.stops.output_closed:
            return
        self.stops.output_closed = True
        if self._run is not None:
            self._run.interrupt()
            self._output.note(_CLOSED_NOTE)
        elif not self._ran:
            self.scope.cancel()

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Receive stop signals (and stdout's loss) until cancelled."""
        token = anyio.lowlevel.current_token()
        loop_thread = threading.get_ident()

        def on_closed() -> None:  # from whichever thread found stdout gone
            if threading.get_ident() == loop_thread:
                self._closed()
                return
            with contextlib.suppress(anyio.RunFinishedError):  # its loop is gone
                anyio.from_thread.run_sync(self._closed, token=token)

        guard = installed_guard()
        with (
            _handlers_restored(STOP_SIGNALS),
            anyio.open_signal_receiver(*STOP_SIGNALS) as signals,
        ):
            unsubscribe = guard.on_stdout_closed(on_closed) if guard else None
            try:
                async with anyio.create_task_group() as tg:
                    if guard is not None:
                        tg.start_soon(guard.watch_stdout_reader)
                    task_status.started()
                    async for signum in signals:
                        self._signalled(signum)
            finally:
                if unsubscribe is not None:
                    unsubscribe()


class SignalExit(SystemExit):
    """A stop signal outside a run: the process ends with status 128 + its number."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    del frame
    raise SignalExit(signum)


@contextmanager
def entry_signals() -> Iterator[None]:
    """While the CLI runs: a stop signal outside a run ends the process cleanly.

    Installs handlers raising `SignalExit` (a `StopWatch` takes the signals
    over during a run and puts these back after); restores the previous
    handlers on exit. Only in the main thread (elsewhere, nothing is changed).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _handlers_restored(STOP_SIGNALS):
        for signum in STOP_SIGNALS:
            signal.signal(signum, _raise_exit)
        yield
