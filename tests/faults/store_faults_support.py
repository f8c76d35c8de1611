"""Real store faults: another process holding the lock, a full filesystem, a read-only mount.

Nothing here fakes SQLite or the disk: the lock is held by a second process's
own SQLite connection (``BEGIN EXCLUSIVE``), the full disk is a small tmpfs,
the read-only store is a read-only bind mount. Each is undone by its fixture
(stdin closed, unmounted), so the suite can run again on the same machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()  # a line, or stdin closed: let go
conn.execute("ROLLBACK")
conn.close()
print("released", flush=True)
"""


class LockHolder:
    """A second process holding an exclusive lock on a SQLite database until released."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until the lock is held
        if line.strip() != "locked":
            self.release()
            raise AssertionError(f"the lock holder did not take the lock: {line!r}")

    @property
    def holding(self) -> bool:
        """True while the process still holds the lock (it has not been released)."""
        return self.proc.poll() is None

    def release(self) -> None:
        """Let go of the lock and wait for the process to end. Idempotent."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.write("go\n")
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture(name="lock_holder")
def lock_holder_fixture() -> Iterator[type[LockHolder]]:
    """Make `LockHolder`s; every one is released when the test ends."""
    made: list[LockHolder] = []

    class Tracked(LockHolder):
        def __init__(self, path: Path) -> None:
            super().__init__(path)
            made.append(self)

    yield Tracked
    for holder in made:
        holder.release()


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True)


def _unmount(path: Path) -> None:
    done = subprocess.run(["umount", str(path)], capture_output=True, text=True)
    if done.returncode != 0:  # something still has a file open there: detach it
        subprocess.run(["umount", "-l", str(path)], capture_output=True, text=True)


@pytest.fixture(name="small_fs")
def small_fs_fixture(tmp_path: Path) -> Iterator[Path]:
    """A fresh 4 MiB tmpfs, unmounted afterwards (skipped where mounting is impossible)."""
    if os.geteuid() != 0:
        pytest.skip(
            "mounting a small tmpfs needs root (the RLIMIT_FSIZE rows run anyway)"
        )
    root = tmp_path / "small-fs"
    root.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(root))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield root
    finally:
        _unmount(root)


def fill(fs: Path) -> Path:
    """Fill `fs` to the last byte with a ballast file; remove it to free the space."""
    ballast = fs / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1):  # unbuffered, to the last byte
            block = b"\0" * size
            try:
                while True:
                    os.write(fd, block)
            except OSError:
                pass
    finally:
        os.close(fd)
    return ballast


@pytest.fixture(name="read_only_view")
def read_only_view_fixture(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """``(writable, view)``: a directory and a read-only bind mount of it.

    Writes through `view` fail with EROFS even for root (chmod would not stop
    root). Skipped where bind mounts are impossible.
    """
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root (the chmod rows cover others)")
    writable = tmp_path / "store-dir"
    view = tmp_path / "read-only-view"
    writable.mkdir()
    view.mkdir()
    bound = _mount("--bind", str(writable), str(view))
    if bound.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bound.stderr.strip()}")
    try:
        remounted = _mount("-o", "remount,bind,ro", str(view))
        if remounted.returncode != 0:
            pytest.skip(f"cannot make the bind mount read-only: {remounted.stderr}")
        yield writable, view
    finally:
        _unmount(view)
