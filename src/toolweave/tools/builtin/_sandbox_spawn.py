"""Start a process from a Landlock-restricted thread, and wait for it without blocking.

Why a thread, and not ``preexec_fn`` or a helper program (measured with
``bench/bench_sandbox.py`` on the shared 2-core CI machine, toolweave
imported so the parent is as big as a real agent process):

- ``preexec_fn`` makes `subprocess` use ``fork`` instead of ``vfork``: the
  page tables of the whole parent are copied, +4 to +10 ms per spawn here,
  growing with the parent's size;
- a helper (``python -I … -c``, apply Landlock, ``exec``) costs an
  interpreter start: +7 ms for a bare ``python -I -S``, ~0.5 s if it imports
  toolweave;
- Landlock restricts the *calling thread* and everything it starts later
  (``landlock_restrict_self`` and ``no_new_privs`` are per-thread), so a fresh
  thread that restricts itself and then calls `subprocess.Popen` gives a child
  that is confined from its first instruction, while `Popen` keeps its fast
  ``vfork`` path: about +1 ms per spawn (thread start, ruleset, hand-off).

The thread exists only for the spawn and is never reused, so no other work
ever runs restricted. `PopenProcess` then gives the `Popen` the small async
surface `run_shell` needs: stdout is read non-blocking with
`anyio.wait_readable`, and exit is awaited on a pidfd (Linux >= 5.3; Landlock
needs 5.13), so both work on asyncio and trio and a wait can be cancelled.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO

import anyio
import anyio.abc

from ._bash_process import SPAWN_STDIO
from ._landlock import Ruleset, enforce_in_child

__all__ = ["PopenProcess", "spawn_landlocked"]

_READ_SIZE = 65_536


class _FdReceiveStream(anyio.abc.ByteReceiveStream):
    """A pipe's read end as an anyio byte stream (non-blocking reads)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._fd = pipe.fileno()
        os.set_blocking(self._fd, False)

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        """The next chunk; raises `anyio.EndOfStream` at end of file."""
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

    Offers what `run_shell` uses of `anyio.abc.Process`: `pid`, `stdout`,
    `wait`, `returncode` and `aclose`.
    """

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdout is not None
        self._popen = popen
        self._pidfd = os.pidfd_open(popen.pid)
        self.pid = popen.pid
        """The child's process id (its process group id too, with a new session)."""
        self.stdout = _FdReceiveStream(popen.stdout)
        """The child's stdout (stderr is folded in by the caller's choice)."""

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


def _popen_restricted(
    rules: list[tuple[str, int]],
    block_tcp: bool,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
) -> subprocess.Popen[bytes]:
    """In a fresh thread: restrict that thread, then start `argv` from it."""
    started: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []

    def confined() -> None:
        try:
            ruleset = Ruleset(rules, block_tcp=block_tcp)
            try:
                enforce_in_child(ruleset.fd)  # this thread only, for good
            finally:
                ruleset.close()
            started.append(
                subprocess.Popen(list(argv), cwd=cwd, env=dict(env), **SPAWN_STDIO)
            )
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    # the caller's context goes along, so the declaration audit sees the spawn
    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(confined,), name="toolweave-landlock-spawn"
    )
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return started[0]


async def spawn_landlocked(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    rules: Iterable[tuple[str, int]],
    block_tcp: bool,
) -> PopenProcess:
    """Start `argv` confined by Landlock `rules` (path, rights), in a new session.

    stdin is /dev/null, stderr goes to stdout. The spawn itself runs in a
    worker thread and cannot be cancelled half-way (a started child is always
    handed back, so the caller can kill it).

    Raises:
        OSError: Landlock refused the ruleset, or the program could not start.
    """
    popen = await anyio.to_thread.run_sync(
        _popen_restricted, list(rules), block_tcp, argv, cwd, env
    )
    return PopenProcess(popen)
