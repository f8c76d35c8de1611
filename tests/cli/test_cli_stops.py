"""The parts behind the signal rows: exit statuses, the output guard, handlers put back.

The rows themselves (real signals to the real CLI) are in
``tests/faults/test_signal_faults.py``; here each mechanism on its own, with
real pipes and pseudo-terminals.
"""

from __future__ import annotations

import io
import os
import pty
import signal
from pathlib import Path

import anyio
import pytest

from toolweave.cli._drive import drive_run
from toolweave.cli._output import JsonOutput
from toolweave.cli._output_guard import GuardedStream, OutputGuard
from toolweave.cli._signals import OUTPUT_CLOSED, Stops, entry_signals
from toolweave.loop import Agent
from toolweave.messages import ModelResponse, StopReason, Text
from toolweave.models import ScriptedModel


@pytest.mark.parametrize(
    ("stops", "completed", "interrupted", "code"),
    [
        (Stops(), True, False, 0),
        (Stops(signal=signal.SIGTERM), True, False, 0),  # done before the signal bit
        (Stops(), False, False, 1),  # an error, a budget
        (Stops(), False, True, 130),  # interrupted, no signal (the library's own)
        (Stops(signal=signal.SIGINT), False, True, 130),
        (Stops(signal=signal.SIGTERM), False, True, 143),
        (Stops(signal=signal.SIGHUP), False, True, 129),
        (Stops(signal=signal.SIGTERM, quit=True), False, True, 143),
        (Stops(signal=signal.SIGHUP, output_closed=True), False, True, 129),
        (Stops(output_closed=True), False, True, OUTPUT_CLOSED),
    ],
)
def test_exit_statuses(
    stops: Stops, completed: bool, interrupted: bool, code: int
) -> None:
    assert stops.exit_code(completed=completed, interrupted=interrupted) == code


def _is_devnull(fd: int) -> bool:
    return os.fstat(fd).st_rdev == os.stat(os.devnull).st_rdev


def test_a_write_to_a_closed_pipe_ends_output_once_and_quietly() -> None:
    read, write = os.pipe()
    stream = io.TextIOWrapper(os.fdopen(write, "wb"), encoding="utf-8")
    told: list[str] = []
    guarded = GuardedStream(stream, lambda: told.append("closed"))
    try:
        guarded.write("first\n")
        guarded.flush()
        assert os.read(read, 100) == b"first\n"
        os.close(read)
        guarded.write("x" * 10_000)  # EPIPE (Python ignores SIGPIPE)
        guarded.flush()
        guarded.write("more\n")
        guarded.flush()
        assert told == ["closed"] and guarded.closed_by_reader
        assert _is_devnull(stream.fileno())  # the exit's own flush cannot fail now
        stream.flush()
    finally:
        stream.close()


@pytest.mark.anyio
async def test_the_watch_sees_a_pipe_closed_without_any_write() -> None:
    read, write = os.pipe()
    stream = io.TextIOWrapper(os.fdopen(write, "wb"), encoding="utf-8")
    guard = OutputGuard(stream, io.StringIO())
    told: list[str] = []
    guard.on_stdout_closed(lambda: told.append("closed"))
    try:
        with anyio.move_on_after(0.2) as waited:  # a live reader: it keeps waiting
            await guard.watch_stdout_reader()
        assert waited.cancelled_caught and told == []
        os.close(read)
        read = -1
        with anyio.fail_after(10):
            await guard.watch_stdout_reader()
        assert told == ["closed"] and _is_devnull(write)
        # Subscribing late is told at once.
        guard.on_stdout_closed(lambda: told.append("late"))
        assert told == ["closed", "late"]
    finally:
        stream.close()
        if read != -1:
            os.close(read)


@pytest.mark.anyio
async def test_the_watch_sees_a_terminal_hang_up_but_not_typing() -> None:
    controller, terminal = pty.openpty()
    stream = io.TextIOWrapper(os.fdopen(terminal, "wb"), encoding="utf-8")
    guard = OutputGuard(stream, io.StringIO())
    try:
        os.write(controller, b"typed ahead\n")  # readable: not a reason to stop
        with anyio.move_on_after(0.2) as waited:
            await guard.watch_stdout_reader()
        assert waited.cancelled_caught and not guard.stdout.closed_by_reader
        os.close(controller)
        controller = -1
        with anyio.fail_after(10):
            await guard.watch_stdout_reader()
        assert guard.stdout.closed_by_reader
    finally:
        stream.close()
        if controller != -1:
            os.close(controller)


@pytest.mark.anyio
async def test_a_regular_file_is_not_watched(tmp_path: Path) -> None:
    with (tmp_path / "out.txt").open("w") as stream:
        guard = OutputGuard(stream, io.StringIO())
        with anyio.fail_after(10):
            await guard.watch_stdout_reader()  # returns: nothing to wait for
        assert not guard.stdout.closed_by_reader


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_entry_handlers_are_put_back_after_a_run(backend: str) -> None:
    """asyncio resets a signal to its default when a run's receiver closes; not here."""
    model = ScriptedModel([ModelResponse([Text("done")], StopReason.END_TURN)])
    output = JsonOutput(io.StringIO())

    async def drive() -> int:
        result = await drive_run(
            Agent(model, []), "go", recorder=None, output=output, handle_signals=True
        )
        return 0 if result.finished is not None else 1

    signums = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {s: signal.getsignal(s) for s in signums}
    with entry_signals():
        installed = {s: signal.getsignal(s) for s in signums}
        assert installed != before
        assert anyio.run(drive, backend=backend) == 0
        assert {s: signal.getsignal(s) for s in signums} == installed
    assert {s: signal.getsignal(s) for s in signums} == before
