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
ever runs restricted. `PopenProcess` (`_bash_popen`, shared with the other
spawners) then gives the `Popen` the small async surface `run_shell` needs.
"""

from __future__ import annotations

import contextvars
import queue
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path

import anyio.to_thread

from ._landlock import Ruleset, enforce_in_child
from ._popen import PopenProcess, popen

__all__ = ["spawn_landlocked", "spawn_scoped"]


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
            started.append(popen(argv, cwd, env))
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

    def started() -> PopenProcess:
        return PopenProcess(_popen_restricted(list(rules), block_tcp, argv, cwd, env))

    return await anyio.to_thread.run_sync(started)


class _ScopedSpawner:
    """One long-lived thread, restricted by Landlock scopes, that starts processes.

    Why long-lived: bwrap's ``--die-with-parent`` is ``PR_SET_PDEATHSIG``,
    which fires when the *thread* that started it exits, so a thread per spawn
    (as `spawn_landlocked` uses) would kill bwrap at once. This thread lives
    as long as the process, runs nothing but spawns, and is started on first use.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[
            tuple[
                Callable[[], subprocess.Popen[bytes]], Future[subprocess.Popen[bytes]]
            ]
        ] = queue.SimpleQueue()
        self._started = False

    def submit(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]
    ) -> subprocess.Popen[bytes]:
        """Start `argv` from the restricted thread; blocks until it has started.

        Raises:
            OSError: the thread could not restrict itself, or the spawn failed.
        """
        with self._lock:
            if not self._started:
                threading.Thread(
                    target=self._serve, name="toolweave-scoped-spawn", daemon=True
                ).start()
                self._started = True
        done: Future[subprocess.Popen[bytes]] = Future()
        # the caller's context goes along, so the declaration audit sees the spawn
        context = contextvars.copy_context()
        self._jobs.put((lambda: context.run(popen, argv, cwd, env), done))
        return done.result()

    def _serve(self) -> None:
        failure: OSError | None = None
        try:
            ruleset = Ruleset([], files=False)
            try:
                enforce_in_child(ruleset.fd)  # this thread only, for good
            finally:
                ruleset.close()
        except OSError as exc:  # every spawn then fails: fail closed
            failure = exc
        while True:
            start, done = self._jobs.get()
            if failure is not None:
                done.set_exception(failure)
                continue
            try:
                done.set_result(start())
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)


_SCOPED = _ScopedSpawner()


async def spawn_scoped(
    argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]
) -> PopenProcess:
    """Start `argv` under Landlock scopes only (ABI >= 6), in a new session.

    No file right is taken (bubblewrap started so still mounts its sandbox);
    the process and everything it starts may not signal any process outside
    the restricted domain (the agent, the user's other programs: ``kill -9
    -1``) nor connect to their abstract Unix sockets. Spawned from one
    long-lived thread (`_ScopedSpawner`), so ``--die-with-parent`` holds.

    Raises:
        OSError: Landlock refused the ruleset, or the program could not start.
    """

    def started() -> PopenProcess:
        return PopenProcess(_SCOPED.submit(argv, cwd, env))

    return await anyio.to_thread.run_sync(started)
