"""A started `subprocess.Popen` as the small async process `run_shell` drives.

Every bash spawner (plain, bubblewrap, Landlock) starts its process with
`subprocess.Popen` and wraps it in `PopenProcess`, rather than using
`anyio.open_process`, for two reasons:

- the exit is awaited on a pidfd (Linux >= 5.3), so it is known the moment
  the shell exits, whoever still holds its output pipe (asyncio's own
  subprocess transport on Python 3.11 only reports an exit once every pipe
  has closed, which a child that left the process group can delay for ever);
- the read end of the output pipe is ours, so its inode is known and
  `kill_leftovers` can find a process that left the group but still holds the
  pipe (``setsid cmd &``, ``set -m; cmd &``).

stdout is read non-blocking with `anyio.wait_readable`, so both work on
asyncio and trio and a wait can be cancelled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

__all__ = [
    "SPAWN_STDIO",
    "PopenProcess",
    "ProcessLike",
    "Spawner",
    "popen",
    "spawn_popen",
]

_READ_SIZE = 65_536

SPAWN_STDIO: Mapping[str, Any] = {
    "stdin": subprocess.DEVNULL,
    "stdout": subprocess.PIPE,
    "stderr": subprocess.STDOUT,
    "start_new_session": True,
}
"""What every spawner passes to the process it starts, sandboxed or not:
`run_shell` reads one merged stream and kills the command's whole session."""


class _FdReceiveStream(anyio.abc.ByteReceiveStream):
    """A pipe's read end as an anyio byte stream (non-blocking reads)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        self.inode = os.fstat(self._fd).st_ino
        """The pipe's inode: ``/proc/<pid>/fd/*`` of a writer links to ``pipe:[inode]``."""
        os.set_blocking(self._fd, False)

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        """The next chunk; raises `anyio.EndOfStream` at end of file.

        Always a checkpoint, even when data is waiting: a command that writes
        as fast as we read (``cat /dev/zero``) must not keep the event loop
        from its other tasks, its deadline included.
        """
        await anyio.lowlevel.checkpoint()
        while True:
            if self._pipe.closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        """Close the read end."""
        if not self._pipe.closed:
            anyio.notify_closing(self._fd)
            self._pipe.close()


class PopenProcess:
    """The async face of a `subprocess.Popen` with a piped stdout.

    Offers what `run_shell` uses (`ProcessLike`): `pid`, `stdout`,
    `output_inode`, `wait`, `returncode` and `aclose`.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        """Take over a started `popen`; if that fails, kill and reap it first.

        Blocking only on that failure path (build it in the spawning worker
        thread, as `spawn_popen` does).

        Raises:
            OSError: no pidfd (out of descriptors): the child is then gone.
        """
        assert popen.stdout is not None
        self._popen = popen
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except OSError:  # never leave a command running that nobody waits for
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
            popen.stdout.close()
            raise
        self.pid = popen.pid
        """The child's process id (its process group id too, with a new session)."""
        self.stdout = _FdReceiveStream(popen.stdout)
        """The child's stdout (stderr is folded in by the caller's choice)."""
        self.output_inode: int | None = self.stdout.inode
        """The inode of the output pipe (see `kill_leftovers`)."""

    @property
    def returncode(self) -> int | None:
        """The exit status once reaped (negative: killed by that signal)."""
        return self._popen.returncode

    async def wait(self) -> int:
        """Wait until the child exits (a cancellable checkpoint); its status."""
        while True:
            code = self._popen.poll()
            if code is not None:
                return code
            await anyio.wait_readable(self._pidfd)

    async def aclose(self) -> None:
        """Kill the child if it still runs, reap it, close every descriptor."""
        with anyio.CancelScope(shield=True):
            if self._popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    self._popen.kill()
                await self.wait()
            await self.stdout.aclose()
            if self._pidfd >= 0:
                anyio.notify_closing(self._pidfd)
                os.close(self._pidfd)
                self._pidfd = -1


def popen(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> subprocess.Popen[bytes]:
    """Start `argv` the way every spawner must (`SPAWN_STDIO`). Blocking."""
    return subprocess.Popen(list(argv), cwd=cwd, env=dict(env), **SPAWN_STDIO)


async def spawn_popen(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> PopenProcess:
    """Start `argv` unconfined (or confined by its own prefix, as bwrap is).

    The fork and exec run in a worker thread, off the event loop.

    Raises:
        OSError: the program could not start.
    """
    return await anyio.to_thread.run_sync(_started, argv, cwd, env)


def _started(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> PopenProcess:
    return PopenProcess(popen(argv, cwd, env))


class ProcessLike(Protocol):
    """What `run_shell` uses of a started process (`anyio.abc.Process` has it)."""

    @property
    def pid(self) -> int:
        """The process id (and, in a new session, its group id)."""
        ...

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        """stdout, with stderr folded in."""
        ...

    @property
    def output_inode(self) -> int | None:
        """The inode of the stdout pipe, to find who else holds it; None if unknown."""
        ...

    @property
    def returncode(self) -> int | None:
        """The exit status once known."""
        ...

    async def wait(self) -> int:
        """Wait for the exit."""
        ...

    async def aclose(self) -> None:
        """Reap the process and close its streams."""
        ...


Spawner = Callable[[Sequence[str], Path, Mapping[str, str]], Awaitable[ProcessLike]]
"""Starts ``argv`` in ``cwd`` with ``env``, in a new session, stdin /dev/null,
stderr into stdout (a sandbox supplies its own)."""
