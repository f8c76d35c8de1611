"""Which process owns a run, and whether it is still alive."""

from __future__ import annotations

import os
import socket
import time

from ._records import LeaseInfo

__all__ = ["current_owner", "lease_live", "owner_alive"]


def current_owner() -> str:
    """``host:pid`` of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str) -> bool:
    """False only if `owner` is a process on this host that no longer exists.

    A process on another host cannot be checked and counts as alive. A reused
    pid reads as alive (the safe answer: a live run is never resumed twice).
    """
    host, _, pid_text = owner.rpartition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lease_live(lease: LeaseInfo, *, now: float | None = None) -> bool:
    """True while `lease` still binds: its owner may be alive and its heartbeat is fresh.

    A successor may take a lease over when this is False: the owner is a
    process on this host that no longer exists, or it has not renewed the lease
    for longer than its term (a crashed host, a hung process, a reused pid).
    """
    now = time.time() if now is None else now
    return owner_alive(lease.owner) and now - lease.heartbeat_wall <= lease.term
