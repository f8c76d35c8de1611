"""Helpers shared by the built-in tool tests (a unique name: conftest modules collide)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from toolweave.messages import ToolCall
from toolweave.tools import SessionState, Tool, ToolContext


async def run(tool: Tool, raw: dict[str, Any], state: SessionState) -> Any:
    """Validate `raw` and call `tool` the way the lifecycle does."""
    args = tool.parse(raw)
    ctx = ToolContext(ToolCall(f"call-{tool.name}", tool.name, raw), state=state)
    return await tool.call(args, ctx)


def processes_running(marker: str) -> list[int]:
    """Pids (as this process sees them) whose command line contains `marker`.

    Found by command line, not by a pid the command printed: under bwrap each
    call has its own pid namespace, and ``$!`` there is that namespace's number.
    """
    found: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as file:
                cmdline = file.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # exited meanwhile
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found


@contextmanager
def _pidfd(pid: int) -> Iterator[int | None]:
    """A pidfd of `pid` (None if it is gone), closed on leaving."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


async def leftovers(marker: str, *, within: float = 5.0) -> list[int]:
    """Processes whose command line contains `marker` still alive after `within` s.

    Each is waited for on a pidfd (no polling); those still running then are
    killed (the test's own cleanup) and returned, so a test asserts the list is
    empty.
    """
    with anyio.move_on_after(within):
        for pid in processes_running(marker):
            with _pidfd(pid) as fd:
                if fd is not None:
                    await anyio.wait_readable(fd)
    alive: list[int] = []
    for pid in processes_running(marker):
        with _pidfd(pid) as fd:
            if fd is not None:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                alive.append(pid)
    return alive
