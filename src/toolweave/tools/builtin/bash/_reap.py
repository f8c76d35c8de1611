"""Find and kill what a bash call left behind outside its process group.

`run_shell` kills the call's process group, which is the whole command unless
a process moved out of it: ``set -m`` gives each background job a group of
its own (same session), and ``setsid`` makes a new session. Such a process
would keep running after the call, and if it still holds the output pipe,
the call could only stop reading after a grace period.

`kill_leftovers` reads ``/proc`` once per round and SIGKILLs every process
that is still in the call's session, or that holds the call's output pipe
open (whatever session it moved to), until a round finds none. Each kill goes
through a pidfd opened *before* the membership is checked again, so a pid
reused by an unrelated process in between is never signalled.

Not found: a process that left the session *and* closed the output pipe
(``setsid cmd >/dev/null 2>&1 &``); nothing in ``/proc`` ties it to the call
any more. Under bwrap the call's pid namespace kills it (see `_sandbox`);
under Landlock it outlives the call (docs/bash-safety.md).
"""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = ["kill_leftovers"]

MAX_ROUNDS = 8
"""Scans at most: a round kills everything it found, so a later one only
finds what was forked between a scan and its kill."""


def kill_leftovers(session: int, pipe_inode: int | None) -> list[int]:
    """SIGKILL the processes in `session` or holding pipe `pipe_inode`; their pids.

    Blocking (reads ``/proc``): call it in a worker thread. Never raises for a
    process that vanished or that we may not inspect or signal.
    """
    killed: list[int] = []
    for _ in range(MAX_ROUNDS):
        found = [
            pid
            for pid in _pids()
            if pid not in killed and _belongs(pid, session, pipe_inode)
        ]
        hit = [pid for pid in found if _kill_if_still(pid, session, pipe_inode)]
        killed += hit
        if not hit:
            break
    return killed


def _pids() -> list[int]:
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [int(n) for n in names if n.isdigit() and int(n) != me]


def _belongs(pid: int, session: int, pipe_inode: int | None) -> bool:
    """Alive (not a zombie) and in `session` or holding the pipe."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # fields after the command name (which may hold spaces and parentheses)
    fields = stat[stat.rfind(b")") + 2 :].split()
    if len(fields) < 4 or fields[0] in (b"Z", b"X"):
        return False
    if int(fields[3]) == session:
        return True
    return pipe_inode is not None and _holds_pipe(pid, pipe_inode)


def _holds_pipe(pid: int, inode: int) -> bool:
    target = f"pipe:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone, or not ours to inspect
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
    return False


def _kill_if_still(pid: int, session: int, pipe_inode: int | None) -> bool:
    """Kill `pid` if, once pinned by a pidfd, it still belongs to the call."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        if not _belongs(pid, session, pipe_inode):
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except OSError:  # exited meanwhile, or not ours to signal
        return False
    finally:
        os.close(pidfd)
