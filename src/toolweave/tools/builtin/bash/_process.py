"""Running one shell command: its own process group, a timeout, capped output."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread

from ..sandbox import SPAWN_STDIO, ProcessLike, Spawner, spawn_popen
from ._reap import kill_leftovers

__all__ = [
    "SPAWN_STDIO",
    "OutputCapture",
    "ProcessLike",
    "ShellOutcome",
    "Spawner",
    "run_shell",
]

DRAIN_GRACE = 2.0
"""Seconds to keep reading after the group and the leftovers were killed (a
process we may not kill could hold the pipe open; we stop waiting for it)."""

SETTLE = 0.05
"""Seconds the output may take to reach end of file after the group kill before
`kill_leftovers` looks for a process that left the group. Only a fast path:
when it passes, the scan runs (about a millisecond), nothing is lost."""


class OutputCapture:
    """Keeps the first and last `limit // 2` bytes of a stream, counting the rest.

    Memory stays bounded however much a command prints.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """Most bytes kept."""
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        """Bytes seen."""

    def feed(self, chunk: bytes) -> None:
        """Take the next chunk of output."""
        self.total += len(chunk)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head.extend(chunk[:room])
            chunk = chunk[room:]
        if chunk:
            self.tail.extend(chunk)
            keep = self.limit - self.limit // 2
            if len(self.tail) > keep:
                del self.tail[: len(self.tail) - keep]

    def text(self) -> str:
        """The kept output as text (invalid UTF-8 replaced, NUL kept).

        If anything was dropped, a first line says how much was printed and
        kept, and a marker stands where the omitted bytes were.
        """
        omitted = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head + tail
        # first, so that a preview of a long result shows it too
        notice = (
            f"[output cut: the command printed {self.total:,} bytes; the first "
            f"{len(self.head):,} and the last {len(self.tail):,} are kept]\n"
        )
        marker = f"\n\n... [{omitted} bytes of output omitted] ...\n\n"
        return f"{notice}{head}{marker}{tail}"


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    """How a command ended."""

    output: str
    """stdout and stderr interleaved, capped (see `OutputCapture`)."""
    returncode: int | None
    """The shell's exit status (negative: killed by that signal); None if unknown."""
    timed_out: bool
    """True if the timeout ended it."""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _pump(stream: anyio.abc.ByteReceiveStream, capture: OutputCapture) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in stream:
            capture.feed(chunk)


async def run_shell(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    time_limit: float,
    max_output_bytes: int,
    spawn: Spawner | None = None,
) -> ShellOutcome:
    """Run `command` with bash in a new session (its own process group).

    When the shell exits, or `time_limit` seconds pass, the whole group is
    killed (SIGKILL), and so is every process that left the group but stayed
    in the session or kept the output pipe open (`kill_leftovers`), so no
    background child outlives the call; output they wrote before that is
    kept. If the calling task is cancelled, all of them are killed too and the
    cancellation propagates. The call never waits on a leftover: reading stops
    at most `DRAIN_GRACE` seconds after the kills. `spawn` starts the shell (a
    sandbox's spawner); None = an unconfined `spawn_popen`.
    """
    capture = OutputCapture(max_output_bytes)
    process = await (spawn or spawn_popen)(["bash", "-c", command], cwd, env)
    assert process.stdout is not None
    reaped = False
    try:
        async with anyio.create_task_group() as tg:
            drained = anyio.Event()

            async def pump() -> None:
                assert process.stdout is not None
                await _pump(process.stdout, capture)
                drained.set()

            tg.start_soon(pump)
            with anyio.move_on_after(time_limit) as deadline:
                await process.wait()
            _kill_group(process.pid)
            with anyio.move_on_after(SETTLE):
                await drained.wait()
            if not drained.is_set():  # something outside the group holds the pipe
                await _reap(process)
            reaped = True
            with anyio.move_on_after(DRAIN_GRACE):
                await drained.wait()
            tg.cancel_scope.cancel()
    finally:
        _kill_group(process.pid)
        with anyio.CancelScope(shield=True):
            if not reaped:  # cancelled or failed part-way: look for leftovers too
                await _reap(process)
            await process.aclose()
    return ShellOutcome(
        output=capture.text(),
        returncode=process.returncode,
        timed_out=deadline.cancelled_caught,
    )


async def _reap(process: ProcessLike) -> None:
    """`kill_leftovers` of the shell's session and output pipe, off the loop."""
    await anyio.to_thread.run_sync(kill_leftovers, process.pid, process.output_inode)
