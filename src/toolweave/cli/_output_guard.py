"""stdout and stderr that a vanished reader cannot crash: a closed pipe ends output quietly.

``toolweave run --json | head -1`` used to die in a BrokenPipe exception-group
traceback, the session left reading *crashed*. With the guard (installed by the
CLI's entry point, `guarded_output`) a write or flush that fails with an
OSError (EPIPE from a closed pipe, EIO from a hung-up terminal) ends that
stream's output: the descriptor is pointed at ``/dev/null`` (so Python's own
flush at exit cannot fail again), later writes are dropped, and the
listeners of stdout are told (the `StopWatch` interrupts the run: it ends
resumable, exit status 141). A pipe's reader closing or a terminal hanging up
is also seen at once, without a write (`OutputGuard.watch_stdout_reader`): a run
in a long tool call does not go on unobserved, and rich stops writing to a
terminal that hung up (it is no longer a tty), so no write would tell.
"""

from __future__ import annotations

import contextlib
import os
import select
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, cast, final

import anyio

__all__ = ["GuardedStream", "OutputGuard", "guarded_output", "installed_guard"]


@final
class GuardedStream:
    """A text stream whose write failures end its output instead of raising.

    Everything but writing and flushing is the wrapped stream's. Thread-safe
    enough for its job: the first failure wins, later ones are dropped.
    """

    def __init__(self, stream: TextIO, on_closed: Callable[[], None]) -> None:
        self._stream = stream
        self._on_closed = on_closed
        self.closed_by_reader = False
        """True once a write failed: the reader is gone."""

    def write(self, text: str) -> int:
        """Write `text`; dropped once the reader is gone."""
        if not self.closed_by_reader:
            try:
                return self._stream.write(text)
            except OSError:
                self._lost()
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """Write each of `lines`."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush; nothing once the reader is gone."""
        if not self.closed_by_reader:
            try:
                self._stream.flush()
            except OSError:
                self._lost()

    def lose(self) -> None:
        """The reader is gone (seen without a write): end output now."""
        if not self.closed_by_reader:
            self._lost()

    def _lost(self) -> None:
        self.closed_by_reader = True
        with contextlib.suppress(OSError, ValueError):
            fd = self._stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, fd)
            finally:
                os.close(devnull)
            self._stream.flush()  # what was buffered goes to /dev/null now
        self._on_closed()

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@final
class OutputGuard:
    """The CLI's guarded stdout and stderr, and who wants to know when stdout is gone.

    Only stdout's loss is reported: it carries the run (JSON lines or the
    live view); stderr (prompts, errors) is only kept from raising.
    """

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self.stdout = GuardedStream(stdout, self._stdout_closed)
        self.stderr = GuardedStream(stderr, lambda: None)
        self._stdout_fd = _fileno(stdout)

    def on_stdout_closed(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from the writing thread) once stdout is gone; returns an unsubscriber.

        Called at once if it is gone already.
        """
        if self.stdout.closed_by_reader:
            callback()
            return lambda: None
        with self._lock:
            self._listeners.append(callback)

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return unsubscribe

    def _stdout_closed(self) -> None:
        with self._lock:
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    async def watch_stdout_reader(self) -> None:
        """Wait for stdout's reader to go away (a pipe closed, a terminal hung up); end output then.

        Waits on an epoll instance that watches stdout for error and hang-up
        conditions only (never for readability: a terminal's descriptor is
        readable whenever a key is typed), so it costs nothing while the
        reader lives. Elsewhere than Linux it watches pipes only (their
        write end polls ready only when the read end is closed). Returns at
        once for what cannot be watched (a regular file). Cancel it to stop.
        """
        fd = self._stdout_fd
        if fd is None or self.stdout.closed_by_reader:
            return
        if hasattr(select, "epoll"):
            try:
                watch = select.epoll()
            except OSError:
                return
            with watch:
                try:
                    watch.register(fd, 0)  # error and hang-up are always reported
                except OSError:  # a regular file, /dev/null: nothing to wait for
                    return
                await anyio.wait_readable(watch.fileno())
        else:
            try:
                if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                    return
            except OSError:
                return
            await anyio.wait_readable(fd)
        if _reader_gone(fd):
            self.stdout.lose()


def _fileno(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None


def _reader_gone(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(
        events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)
    )


_installed: OutputGuard | None = None


def installed_guard() -> OutputGuard | None:
    """The guard the CLI's entry point installed, or None (the CLI used in-process)."""
    return _installed


@contextlib.contextmanager
def guarded_output() -> Iterator[OutputGuard]:
    """Replace sys.stdout and sys.stderr by guarded streams for the block; then put them back.

    On the way out the guarded stdout is flushed first, so a reader that left
    at the very end costs no "Exception ignored ... BrokenPipeError" at exit.
    """
    global _installed
    stdout, stderr = sys.stdout, sys.stderr
    guard = OutputGuard(stdout, stderr)
    sys.stdout = cast("TextIO", guard.stdout)
    sys.stderr = cast("TextIO", guard.stderr)
    _installed = guard
    try:
        yield guard
    finally:
        guard.stdout.flush()
        guard.stderr.flush()
        _installed = None
        sys.stdout, sys.stderr = stdout, stderr
