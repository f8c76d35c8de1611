"""Running a manifest tool's command: input as JSON on stdin, stdout as the result."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

__all__ = ["CommandOutcome", "run_command"]

_STDERR_LIMIT = 64_000


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What a finished command produced."""

    returncode: int
    """The exit status; negative when a signal ended it."""
    stdout: str
    """Standard output (UTF-8, undecodable bytes replaced), cut at the byte limit."""
    stderr: str
    """Standard error, cut at 64 kB."""
    truncated: bool
    """True if stdout was longer than the limit."""


class _Sink:
    """Keeps the first `limit` bytes of a stream and drains the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False

    async def drain(self, stream: ByteReceiveStream) -> None:
        async for chunk in stream:
            room = self.limit - len(self.data)
            self.data += chunk[:room]
            self.truncated = self.truncated or len(chunk) > room

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _feed(stdin: ByteSendStream, data: bytes) -> None:
    # A command that never reads its stdin may exit first: that is not an error.
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stdin.send(data)
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stdin.aclose()


def _kill_group(process: Process) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def run_command(
    argv: Sequence[str],
    *,
    stdin: bytes,
    cwd: str,
    env: Mapping[str, str] | None,
    max_output_bytes: int,
) -> CommandOutcome:
    """Run `argv` (no shell) in its own process group and collect its output.

    A checkpoint; cancellable: on cancellation (an interrupt or a timeout) the
    whole process group is killed before this returns. When the command exits,
    whatever it left running in its group is killed too, so a stray background
    child cannot hold the call open.

    Raises:
        OSError: the command could not be started (not found, not executable).
    """
    full_env = None if env is None else {**os.environ, **env}
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=full_env,
        start_new_session=True,
    )
    out, err = _Sink(max_output_bytes), _Sink(_STDERR_LIMIT)
    try:
        async with anyio.create_task_group() as tg:
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            tg.start_soon(_feed, process.stdin, stdin)
            tg.start_soon(out.drain, process.stdout)
            tg.start_soon(err.drain, process.stderr)
            await process.wait()
            _kill_group(process)
    finally:
        _kill_group(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    returncode = process.returncode
    assert returncode is not None
    return CommandOutcome(returncode, out.text(), err.text(), out.truncated)
