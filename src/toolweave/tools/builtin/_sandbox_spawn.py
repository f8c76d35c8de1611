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
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import anyio.to_thread

from ._bash_popen import PopenProcess, popen
from ._landlock import Ruleset, enforce_in_child

__all__ = ["spawn_landlocked"]


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
    popen = await anyio.to_thread.run_sync(
        _popen_restricted, list(rules), block_tcp, argv, cwd, env
    )
    return PopenProcess(popen)
