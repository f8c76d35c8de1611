"""Driving a real `toolweave run` process for the signal rows: scripts, rendezvous, survivors.

Everything real: the CLI in a subprocess with a scripted model, bash tool
children, shell hooks, a pseudo-terminal for the permission prompt. The test
knows a command is running because the command opens a FIFO the test holds
(a blocking open on both sides: a rendezvous, no polling); survivors are
found in /proc by a marker unique to the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


def script(path: Path, *steps: dict[str, Any]) -> Path:
    """Write a `--scripted` model script and return its path."""
    path.write_text(json.dumps({"name": "scripted-faults", "steps": list(steps)}))
    return path


def tools(*calls: tuple[str, str, dict[str, Any]], **step: Any) -> dict[str, Any]:
    """A step calling tools: ``(id, name, input)`` triples."""
    return {
        "tool_calls": [{"id": i, "name": n, "input": a} for i, n, a in calls],
        "usage": {"input_tokens": 100, "output_tokens": 10},
        **step,
    }


def final(text: str) -> dict[str, Any]:
    """A final answer step."""
    return {"text": text, "usage": {"input_tokens": 120, "output_tokens": 5}}


@dataclass
class Fifos:
    """Named pipes in the workspace, each with a name unique to this test (the marker)."""

    workspace: Path
    marker: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    held: dict[str, int] = field(default_factory=dict)

    def name(self, label: str) -> str:
        """The FIFO for `label` (made on first use), relative to the workspace."""
        name = f"{self.marker}-{label}.fifo"
        path = self.workspace / name
        if not path.exists():
            os.mkfifo(path)
        return name

    def hold(self, label: str, timeout: float = 60) -> None:
        """Open `label`'s FIFO for writing: returns once its reader (the command) has it open.

        The write end stays open (the reader blocks on it) until `release`.
        """
        path = self.workspace / self.name(label)
        box: list[int] = []
        opener = threading.Thread(
            target=lambda: box.append(os.open(path, os.O_WRONLY)), daemon=True
        )
        opener.start()
        opener.join(timeout)
        if opener.is_alive():  # nobody came: let the opener go, then fail
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            opener.join()
            os.close(box[0])
            raise AssertionError(f"the command reading {path.name} never started")
        self.held[label] = box[0]

    def release(self, label: str | None = None) -> None:
        """Close `label`'s held write end, or every one (the readers see end of file)."""
        for name in [label] if label is not None else list(self.held):
            os.close(self.held.pop(name))

    def survivors(self) -> list[str]:
        """Live processes (not zombies) whose command line names one of these FIFOs."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            state = stat.rpartition(")")[2].split()[0]
            if self.marker.encode() in cmdline and state != "Z":
                shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry.name}: {shown}")
        return found

    def survivors_after(self, within: float = 15.0) -> list[str]:
        """`survivors`, once each one found has had `within` seconds to die.

        A process group killed as the CLI exits may still be scheduled to die
        when the CLI's exit status is read (a loaded machine): each survivor's
        exit is awaited on a pidfd (readable once it has exited), bounded. One
        still alive after that was never killed.
        """
        for line in self.survivors():
            try:
                fd = os.pidfd_open(int(line.split(":")[0]))
            except ProcessLookupError:  # gone meanwhile
                continue
            try:
                select.select([fd], [], [], within)
            finally:
                os.close(fd)
        return self.survivors()

    def kill_survivors(self) -> None:
        """Clean-up after a failed test: kill whatever is left (by pid, ours only)."""
        for line in self.survivors():
            pid = int(line.split(":")[0])
            with contextlib.suppress(OSError):  # gone meanwhile
                os.killpg(os.getpgid(pid), signal.SIGKILL)


def cli(
    args: list[str],
    workspace: Path,
    *,
    stdin: int | None = subprocess.DEVNULL,
    stderr: int | None = subprocess.DEVNULL,
) -> subprocess.Popen[str]:
    """Start ``toolweave ARGS`` in `workspace` with JSON lines on a pipe."""
    return subprocess.Popen(
        [*CLI, *args],
        cwd=workspace,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )


def events(proc: subprocess.Popen[str]) -> Iterator[dict[str, Any]]:
    """The JSON lines of `proc`'s stdout, parsed, until it closes."""
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)


def read_until(fd: int, needle: bytes, timeout: float = 60) -> bytes:
    """Read `fd` (a pty's controller) until `needle` appears; what was read."""
    seen = b""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise AssertionError(f"never saw {needle!r}; saw {seen[-500:]!r}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the other side closed
            chunk = b""
        if not chunk:
            raise AssertionError(f"closed before {needle!r}; saw {seen[-500:]!r}")
        seen += chunk
    return seen


def drain(fd: int) -> bytes:
    """Everything left to read on a pty's controller once its other side closed."""
    seen = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 5)
        if not ready:
            return seen
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return seen
        if not chunk:
            return seen
        seen += chunk


def stop(proc: subprocess.Popen[str]) -> None:
    """Kill `proc` if it still runs and close its pipes (clean-up in `finally`)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
