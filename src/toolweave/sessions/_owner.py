"""Which process owns a run, and whether it is still alive."""

from __future__ import annotations

import os
import socket

__all__ = ["current_owner", "owner_alive"]


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
