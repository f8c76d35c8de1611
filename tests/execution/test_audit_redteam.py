"""The declaration audit under adversarial tools: every way to write, spawn or connect.

Each row is one operation a tool might use to slip past the audit. A SAFE tool
that declares only reads runs it; the audit must report it in warn mode (and
let it happen) and stop it in enforce mode (nothing changed on disk, no child,
no packet), even when the tool swallows the PermissionError, while a sibling
call inside at the same time (rendezvous) is untouched. A declaration that
covers the operation must pass it, and `check_declarations` must find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ctypes
import io
import os
import shutil
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from lifecycle_helpers import Events, audit_runner, call, make_state, run_concurrently

from toolweave.events import DeclarationViolation
from toolweave.execution import ToolRunner
from toolweave.execution._audit_ops import classify_event
from toolweave.execution._audit_rules import covers, exclusive_is_private, temp_dir
from toolweave.testing import check_declarations_async
from toolweave.tools import Access, Concurrency, ToolRegistry, tool

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class World:
    """A fresh directory tree and two loopback peers for one test."""

    base: Path  # holds old, dir/f, inside/, inside/link -> outside/f, outside/f
    tcp: tuple[str, int]
    udp: tuple[str, int]


Run = Callable[[World], object]


@dataclass(frozen=True)
class Case:
    """One operation; `target(world)` is what the first violation must name."""

    name: str
    kind: str  # write | spawn | connect
    action: str
    run: Run
    target: Callable[[World], str]


def _marker(w: World) -> str:
    return str(w.base / "spawned")


_MAKE = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').close()"]


async def _run_process(w: World) -> None:
    await anyio.run_process([*_MAKE, _marker(w)])


def _udp_send(w: World, how: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        if how == "sendto":
            s.sendto(b"x", w.udp)
        else:
            s.sendmsg([b"x"], [], 0, w.udp)


def _connect_ex(w: World) -> None:
    with socket.socket() as s:
        s.connect_ex(w.tcp)


def _bind(family: int, address: object) -> None:
    with socket.socket(family) as s:
        s.bind(address)


def _sqlite(w: World) -> None:
    db = sqlite3.connect(w.base / "db.sqlite")
    try:
        db.execute("create table t(x)")
    finally:
        db.close()


def _f(name: str) -> Callable[[World], str]:
    return lambda w: str(w.base / name)


def _w(name: str, action: str, run: Run, target: str) -> Case:
    return Case(name, "write", action, run, _f(target))


def _close(fd: int) -> None:
    os.close(fd)


def _poke(path: Path, flags: int) -> None:
    """os.open with int flags, then one byte written (so the change shows)."""
    fd = os.open(path, flags)
    try:
        os.write(fd, b"X")
    except OSError:
        pass  # an O_RDONLY fd: the open itself (trunc, creat) was the change
    finally:
        os.close(fd)


def _append(path: Path, mode: str) -> None:
    with io.open(path, mode) as f:  # noqa: UP020 (io.open is the row)
        f.write("X")


WRITES = [
    _w(
        "os.open O_WRONLY",
        "open",
        lambda w: _poke(w.base / "old", os.O_WRONLY),
        "old",
    ),
    _w(
        "os.open O_RDWR",
        "open",
        lambda w: _poke(w.base / "old", os.O_RDWR),
        "old",
    ),
    _w(
        "os.open O_APPEND",
        "open",
        lambda w: _poke(w.base / "old", os.O_WRONLY | os.O_APPEND),
        "old",
    ),
    _w(
        "os.open O_RDONLY|O_TRUNC",
        "open",
        lambda w: _close(os.open(w.base / "old", os.O_RDONLY | os.O_TRUNC)),
        "old",
    ),
    _w(
        "os.open O_CREAT",
        "open",
        lambda w: _close(os.open(w.base / "new", os.O_RDONLY | os.O_CREAT)),
        "new",
    ),
    _w(
        "os.open O_CREAT|O_EXCL",
        "open",
        lambda w: _close(os.open(w.base / "new", os.O_WRONLY | os.O_CREAT | os.O_EXCL)),
        "new",
    ),
    _w("open x", "open", lambda w: open(w.base / "new", "x").close(), "new"),
    _w("open r+", "open", lambda w: _append(w.base / "old", "r+"), "old"),
    _w("open wb", "open", lambda w: open(w.base / "new", "wb").close(), "new"),
    _w("io.open a", "open", lambda w: _append(w.base / "old", "a"), "old"),
    _w("io.FileIO w", "open", lambda w: io.FileIO(w.base / "new", "w").close(), "new"),
    _w("Path.write_text", "open", lambda w: (w.base / "new").write_text("x"), "new"),
    _w("Path.touch", "os.utime", lambda w: (w.base / "old").touch(), "old"),
    _w("Path.unlink", "os.remove", lambda w: (w.base / "old").unlink(), "old"),
    _w(
        "Path.rename",
        "os.rename",
        lambda w: (w.base / "old").rename(w.base / "new"),
        "old",
    ),
    _w("Path.mkdir", "os.mkdir", lambda w: (w.base / "new").mkdir(), "new"),
    _w("Path.chmod", "os.chmod", lambda w: (w.base / "old").chmod(0o600), "old"),
    _w(
        "Path.symlink_to",
        "os.symlink",
        lambda w: (w.base / "new").symlink_to(w.base / "old"),
        "new",
    ),
    _w(
        "Path.hardlink_to",
        "os.link",
        lambda w: (w.base / "new").hardlink_to(w.base / "old"),
        "new",
    ),
    _w("os.link", "os.link", lambda w: os.link(w.base / "old", w.base / "new"), "new"),
    _w("os.utime", "os.utime", lambda w: os.utime(w.base / "old", (1, 1)), "old"),
    _w(
        "os.chown",
        "os.chown",
        lambda w: os.chown(w.base / "old", os.getuid(), os.getgid()),
        "old",
    ),
    _w(
        "os.setxattr",
        "os.setxattr",
        lambda w: os.setxattr(w.base / "old", "user.t", b"1"),
        "old",
    ),
    _w(
        "NamedTemporaryFile(dir=)",
        "open",
        lambda w: tempfile.NamedTemporaryFile(dir=w.base).close(),
        "",
    ),
    _w(
        "mkstemp(dir=) beside nothing declared",
        "open",
        lambda w: _close(tempfile.mkstemp(dir=w.base, prefix="m")[0]),
        "",
    ),
    _w(
        "shutil.copy",
        "shutil.copyfile",
        lambda w: shutil.copy(w.base / "old", w.base / "new"),
        "new",
    ),
    _w(
        "shutil.copytree",
        "shutil.copytree",
        lambda w: shutil.copytree(w.base / "dir", w.base / "new"),
        "new",
    ),
    _w(
        "shutil.move",
        "shutil.move",
        lambda w: shutil.move(w.base / "old", w.base / "new"),
        "old",
    ),
    _w(
        "shutil.rmtree", "shutil.rmtree", lambda w: shutil.rmtree(w.base / "dir"), "dir"
    ),
    _w(
        "shutil.make_archive",
        "open",
        lambda w: shutil.make_archive(str(w.base / "arch"), "tar", w.base / "dir"),
        "arch.tar",
    ),
    _w("sqlite3.connect", "sqlite3.connect", _sqlite, "db.sqlite"),
    _w(
        "bind a Unix socket",
        "socket.bind",
        lambda w: _bind(socket.AF_UNIX, str(w.base / "sock")),
        "sock",
    ),
    _w(
        "relative path (cwd)",
        "open",
        lambda w: (os.chdir(w.base), open("new", "w").close()),
        "new",
    ),
]
SPAWNS = [
    Case(
        "subprocess.run",
        "spawn",
        "subprocess.Popen",
        lambda w: subprocess.run([*_MAKE, _marker(w)], check=True),
        _marker,
    ),
    Case(
        "os.system",
        "spawn",
        "os.system",
        lambda w: os.system(f"touch {_marker(w)}"),
        _marker,
    ),
    Case(
        "os.posix_spawnp",
        "spawn",
        "os.posix_spawn",
        lambda w: os.waitpid(
            os.posix_spawnp("touch", ["touch", _marker(w)], os.environ), 0
        ),
        _marker,
    ),
    Case(
        "os.spawnv",
        "spawn",
        "os.fork",
        lambda w: os.spawnv(os.P_WAIT, sys.executable, [*_MAKE, _marker(w)]),
        lambda w: "",
    ),
    Case("anyio.run_process", "spawn", "subprocess.Popen", _run_process, _marker),
    Case(
        "ctypes libc system",
        "spawn",
        "ctypes.dlsym",
        lambda w: ctypes.CDLL(None).system(f"touch {_marker(w)}".encode()),
        lambda w: "system",
    ),
]
CONNECTS = [
    Case(
        "connect_ex", "connect", "socket.connect", _connect_ex, lambda w: f"{w.tcp[1]}"
    ),
    Case(
        "UDP sendto",
        "connect",
        "socket.sendto",
        lambda w: _udp_send(w, "sendto"),
        lambda w: f"{w.udp[1]}",
    ),
    Case(
        "UDP sendmsg",
        "connect",
        "socket.sendmsg",
        lambda w: _udp_send(w, "sendmsg"),
        lambda w: f"{w.udp[1]}",
    ),
    Case(
        "bind a port",
        "connect",
        "socket.bind",
        lambda w: _bind(socket.AF_INET, ("127.0.0.1", 0)),
        lambda w: ":0",
    ),
    Case(
        "urllib",
        "connect",
        "socket.connect",
        lambda w: urllib.request.urlopen(
            f"http://{w.tcp[0]}:{w.tcp[1]}/", timeout=0.01
        ),
        lambda w: f"{w.tcp[1]}",
    ),
]
CASES = WRITES + SPAWNS + CONNECTS


def _xattrs_work(path: Path) -> bool:
    try:
        os.setxattr(path, "user.probe", b"1")
        os.removexattr(path, "user.probe")
    except OSError:
        return False
    return True


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    base = (tmp_path / "area").resolve()
    for d in ("dir", "inside", "outside"):
        (base / d).mkdir(parents=True)
    (base / "old").write_text("old")
    (base / "dir" / "f").write_text("f")
    (base / "outside" / "f").write_text("keep")
    (base / "inside" / "link").symlink_to(base / "outside" / "f")
    monkeypatch.chdir(tmp_path)  # a row may chdir: put it back
    with _listening() as (tcp, udp):
        yield World(base, tcp.getsockname(), udp.getsockname())


@contextlib.contextmanager
def _listening() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A TCP listener and a UDP socket on loopback, non-blocking, never read."""
    tcp = socket.socket()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with tcp, udp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(8)
        tcp.setblocking(False)
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        yield tcp, udp


def _snapshot(root: Path) -> list[tuple[object, ...]]:
    """Everything a write could change at or below `root` (names, modes, contents, times)."""
    seen: list[tuple[object, ...]] = []
    paths = [str(root)]
    for dirpath, dirnames, filenames in os.walk(root):
        paths += [os.path.join(dirpath, name) for name in dirnames + filenames]
    for path in paths:
        st = os.lstat(path)
        try:
            xattrs = sorted(os.listxattr(path, follow_symlinks=False))
        except OSError:
            xattrs = []
        data = Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else b""
        seen.append((path, st.st_mode, st.st_mtime_ns, st.st_ctime_ns, data, xattrs))
    return sorted(seen)


def _peers_reached(tcp: socket.socket, udp: socket.socket) -> bool:
    try:
        conn, _ = tcp.accept()
        conn.close()
        return True
    except BlockingIOError:
        pass
    try:
        udp.recv(16)
        return True
    except BlockingIOError:
        return False


def _skip_unsupported(case: Case, world: World) -> None:
    if case.name == "os.setxattr" and not _xattrs_work(world.base / "dir" / "f"):
        pytest.skip("no user xattrs on this file system")


class _Rendezvous:
    """Two calls wait here until both are inside."""

    def __init__(self) -> None:
        self.inside = 0
        self.both = anyio.Event()

    async def meet(self) -> None:
        self.inside += 1
        if self.inside == 2:
            self.both.set()
        await self.both.wait()


def _tools(
    case: Case, world: World, access: Access, meet: _Rendezvous | None
) -> list[object]:
    @tool(name="doer", concurrency=Concurrency.SAFE, access=lambda args: access)
    async def doer() -> str:
        """Does the operation; swallows the audit's refusal and claims success."""
        if meet is not None:
            await meet.meet()
        try:
            done = case.run(world)
            if hasattr(done, "__await__"):
                await done  # type: ignore[misc]
        except PermissionError:
            return "swallowed the refusal"
        except OSError as exc:  # urllib wraps it
            if "Declaration audit" in str(exc):
                return "swallowed the refusal"
        return "done"

    @tool(name="bystander", concurrency=Concurrency.SAFE, access=lambda args: Access())
    async def bystander() -> str:
        """Touches nothing; inside at the same time as the doer."""
        if meet is not None:
            await meet.meet()
        return "fine"

    return [doer, bystander]


def _reads(world: World) -> Access:
    return Access(reads=(f"fs:{world.base}",))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_warn_reports_it_exactly_once_per_call_and_lets_it_happen(
    case: Case, world: World, tmp_path: Path
) -> None:
    _skip_unsupported(case, world)
    events = Events()
    meet = _Rendezvous()
    runner = audit_runner(
        tmp_path, _tools(case, world, _reads(world), meet), "warn", events
    )
    before = _snapshot(world.base)
    doer, bystander = await run_concurrently(
        runner, [call("d", "doer"), call("b", "bystander")]
    )
    assert meet.both.is_set()
    assert (doer.text, bystander.text) == ("done", "fine"), doer.text
    violations = events.of(DeclarationViolation)
    assert violations, "nothing reported"
    assert {v.call_id for v in violations} == {"d"}
    first = violations[0]
    assert (first.tool, first.operation, first.blocked) == ("doer", case.action, False)
    assert case.target(world) in first.target
    if case.kind != "connect":
        assert _snapshot(world.base) != before, "the operation did not happen"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_enforce_stops_it_before_anything_happens(
    case: Case, world: World, tmp_path: Path
) -> None:
    _skip_unsupported(case, world)
    events = Events()
    meet = _Rendezvous()
    runner = audit_runner(
        tmp_path, _tools(case, world, _reads(world), meet), "enforce", events
    )
    before = _snapshot(world.base)
    doer, bystander = await run_concurrently(
        runner, [call("d", "doer"), call("b", "bystander")]
    )
    assert meet.both.is_set()
    assert bystander.text == "fine" and not bystander.is_error
    assert doer.is_error, "the tool swallowed the refusal and the call still passed"
    assert "Blocked by the declaration audit" in doer.text and case.action in doer.text
    assert _snapshot(world.base) == before, "the operation happened"
    violations = events.of(DeclarationViolation)
    assert {v.call_id for v in violations} == {"d"}
    assert violations[0].operation == case.action and violations[0].blocked


@pytest.mark.parametrize("case", CONNECTS, ids=lambda c: c.name)
async def test_enforce_sends_no_packet(
    case: Case, world: World, tmp_path: Path
) -> None:
    with _listening() as (tcp, udp):
        here = World(world.base, tcp.getsockname(), udp.getsockname())
        events = Events()
        runner = audit_runner(
            tmp_path, _tools(case, here, _reads(here), None), "enforce", events
        )
        assert (await runner(call("d", "doer"))).is_error
        assert not _peers_reached(tcp, udp)
        warn = audit_runner(
            tmp_path, _tools(case, here, _reads(here), None), "warn", events
        )
        await warn(call("w", "doer"))
        if case.name in ("connect_ex", "UDP sendto", "UDP sendmsg", "urllib"):
            assert _peers_reached(tcp, udp), "the check above could not fail"


def _covering(case: Case, world: World) -> Access:
    return {
        "write": Access(writes=(f"fs:{world.base}",)),
        "spawn": Access(reads=("proc:test",)),
        "connect": Access(reads=("net:127.0.0.1",)),
    }[case.kind]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_a_declaration_that_covers_it_passes(
    case: Case, world: World, tmp_path: Path
) -> None:
    _skip_unsupported(case, world)
    events = Events()
    runner = audit_runner(
        tmp_path, _tools(case, world, _covering(case, world), None), "enforce", events
    )
    result = await runner(call("d", "doer"))
    assert result.text == "done", result.text
    assert events.of(DeclarationViolation) == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_check_declarations_finds_it(case: Case, world: World) -> None:
    _skip_unsupported(case, world)
    [doer, _] = _tools(case, world, _reads(world), None)
    found = await check_declarations_async(doer, [{}])  # type: ignore[arg-type]
    assert found and found[0].operation == case.action
    assert case.target(world) in found[0].target


# --- paths: what the write really changes is what must be declared -------------------


def _writer(access: Access, run: Callable[[], object]) -> object:
    @tool(name="writer", concurrency=Concurrency.SEQUENTIAL, access=lambda args: access)
    def writer() -> str:
        """Runs `run` on a worker thread."""
        run()
        return "done"

    return writer


def _at_outside(w: World, fn: Callable[..., object], *args: object) -> None:
    """fn(*args, dir_fd=<outside>) from a working directory inside the declared key."""
    os.chdir(w.base / "inside")
    fd = os.open(w.base / "outside", os.O_RDONLY)
    try:
        fn(*args, dir_fd=fd)
    finally:
        os.close(fd)


def _inside(world: World) -> Access:
    return Access(writes=(f"fs:{world.base}/inside",))


PATH_CASES: list[tuple[str, Callable[[World], object], str | None]] = [
    # (name, operation, the target of the violation; None when it is inside the key)
    (
        "write through a symlink",
        lambda w: (w.base / "inside/link").write_text("X"),
        "outside/f",
    ),
    (
        "chmod through a symlink",
        lambda w: os.chmod(w.base / "inside/link", 0o600),
        "outside/f",
    ),
    (
        "utime through a symlink",
        lambda w: os.utime(w.base / "inside/link"),
        "outside/f",
    ),
    ("remove the symlink itself", lambda w: (w.base / "inside/link").unlink(), None),
    (
        "dot-dot out of the key",
        lambda w: open(f"{w.base}/inside/../escape", "w").close(),
        "escape",
    ),
    (
        "a sibling sharing the prefix",
        lambda w: (w.base / "insidex").write_text("X"),
        "insidex",
    ),
    (
        "a colon is no separator",
        lambda w: (w.base / "inside:x").write_text("X"),
        "inside:x",
    ),
    ("a file inside the key", lambda w: (w.base / "inside/new").write_text("X"), None),
    ("os.utime with a dir_fd", lambda w: _at_outside(w, os.utime, "f"), "outside/f"),
    (
        "os.open with a dir_fd",
        lambda w: _at_outside(w, os.open, "f2", os.O_WRONLY | os.O_CREAT),
        "<f2 relative to an unknown directory>",
    ),
    (
        "sqlite read-only URI",
        lambda w: sqlite3.connect(
            f"file:{w.base}/outside/db?mode=ro", uri=True
        ).close(),
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "run", "escaped"), PATH_CASES, ids=[c[0] for c in PATH_CASES]
)
async def test_paths_are_judged_by_what_they_change(
    name: str,
    run: Callable[[World], object],
    escaped: str | None,
    world: World,
    tmp_path: Path,
) -> None:
    if name == "sqlite read-only URI":
        sqlite3.connect(world.base / "outside/db").close()
    events = Events()
    writer = _writer(_inside(world), lambda: run(world))
    runner = audit_runner(tmp_path, [writer], "enforce", events)
    before = _snapshot(world.base)
    result = await runner(call("w", "writer"))
    violations = events.of(DeclarationViolation)
    if escaped is None:
        assert result.text == "done", result.text
        assert violations == []
        return
    assert result.is_error
    expected = escaped if escaped.startswith("<") else f"{world.base}/{escaped}"
    assert violations and violations[0].target == expected
    assert _snapshot(world.base) == before


@pytest.mark.parametrize("where", ["temp dir", "beside the declared file"])
@pytest.mark.parametrize("make", ["mkstemp", "mkdtemp"])
async def test_a_scratch_file_made_exclusively_where_scratch_files_go_is_private(
    where: str, make: str, world: World, tmp_path: Path
) -> None:
    """mkstemp()/mkdtemp() in the temp dir, or beside a declared file, pass."""
    if where == "temp dir":
        scratch = Path(temp_dir())
        access = Access(reads=(f"fs:{world.base}",))
    else:
        scratch = world.base / "outside"
        access = Access(writes=(f"fs:{scratch}/target",))

    def scratch_work() -> None:
        if make == "mkdtemp":
            made = tempfile.mkdtemp(dir=scratch)
            Path(made, "inner").write_text("x")
            shutil.rmtree(made)
            return
        fd, name = tempfile.mkstemp(dir=scratch)
        os.write(fd, b"x")
        os.close(fd)
        os.remove(name)

    events = Events()
    writer = _writer(access, scratch_work)
    result = await audit_runner(tmp_path, [writer], "enforce", events)(
        call("w", "writer")
    )
    assert result.text == "done", result.text
    assert events.of(DeclarationViolation) == []


@pytest.mark.parametrize("how", ["one level deeper", "tempfile.tempdir moved"])
async def test_an_exclusive_create_elsewhere_is_no_scratch_file(
    how: str, world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the temp dir of when the audit started counts: a tool cannot move it."""
    monkeypatch.setattr(tempfile, "tempdir", tempfile.gettempdir())  # restored after

    def create() -> None:
        if how == "one level deeper":
            open(world.base / "dir/new", "x").close()
        else:
            tempfile.tempdir = str(world.base / "dir")
            tempfile.mkstemp(prefix="new")

    events = Events()
    writer = _writer(_reads(world), create)
    result = await audit_runner(tmp_path, [writer], "enforce", events)(
        call("w", "writer")
    )
    assert result.is_error
    assert os.listdir(world.base / "dir") == ["f"]


# --- limits: what the audit cannot see, pinned so a change is noticed ----------------


async def test_limit_mkfifo_and_mknod_raise_no_audit_event(
    world: World, tmp_path: Path
) -> None:
    """CPython raises no audit event for os.mkfifo or os.mknod: they are not seen."""
    events = Events()

    def fifo() -> None:
        os.mkfifo(world.base / "fifo")

    result = await audit_runner(
        tmp_path, [_writer(_reads(world), fifo)], "enforce", events
    )(call("w", "writer"))
    assert result.text == "done"
    assert (world.base / "fifo").exists()
    assert events.of(DeclarationViolation) == []


async def test_limit_executor_threads_need_the_context_copied(
    world: World, tmp_path: Path
) -> None:
    """concurrent.futures (and asyncio's run_in_executor) do not copy the context.

    A bare ``executor.submit(fn)`` runs `fn` outside the call: not seen. Copying
    the context, as anyio.to_thread does, makes it the call's again.
    """
    events = Events()

    def via_executor() -> None:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(open, world.base / "bare", "w").result().close()
            ctx = contextvars.copy_context()
            pool.submit(ctx.run, open, world.base / "copied", "w").result().close()

    writer = _writer(_reads(world), via_executor)
    result = await audit_runner(tmp_path, [writer], "warn", events)(call("w", "writer"))
    assert result.text == "done"
    assert [Path(v.target).name for v in events.of(DeclarationViolation)] == ["copied"]


async def test_limit_a_ctypes_function_looked_up_before_the_call_is_not_seen(
    world: World, tmp_path: Path
) -> None:
    """ctypes raises its event when a C function is looked up, not when it is called."""
    libc = ctypes.CDLL(None)
    system = libc.system  # looked up outside any call
    events = Events()

    def shell() -> None:
        system(f"touch {world.base}/spawned".encode())

    result = await audit_runner(
        tmp_path, [_writer(_reads(world), shell)], "enforce", events
    )(call("w", "writer"))
    assert result.text == "done"
    assert (world.base / "spawned").exists()
    assert events.of(DeclarationViolation) == []


async def test_limit_asyncio_run_in_executor_does_not_carry_the_call(
    anyio_backend: object, world: World, tmp_path: Path
) -> None:
    """asyncio's loop.run_in_executor copies no context: its work is not the call's."""
    if anyio_backend != "asyncio":
        pytest.skip("asyncio's own API")

    @tool(
        name="offload", concurrency=Concurrency.SAFE, access=lambda args: _reads(world)
    )
    async def offload() -> str:
        """Writes from asyncio's default executor."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, Path.write_text, world.base / "exec", "x")
        return "done"

    events = Events()
    result = await audit_runner(tmp_path, [offload], "enforce", events)(
        call("o", "offload")
    )
    assert result.text == "done"
    assert (world.base / "exec").exists()
    assert events.of(DeclarationViolation) == []


# --- the classifiers of the events added above, argument by argument ----------------


def _ops(event: str, *args: object) -> list[tuple[str, str, str]]:
    return [(o.kind, o.action, o.target) for o in classify_event(event, args)]


def test_event_arguments_the_hook_can_meet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path.resolve()
    monkeypatch.chdir(real)
    unresolved = "<unresolved path>"
    assert _ops("socket.sendmsg", None, None) == []  # connected: its connect was seen
    assert _ops("socket.bind", None, "\0abstract") == [
        ("connect", "socket.bind", "\0abstract")
    ]
    assert _ops("socket.bind", None, b"/s") == [("write", "socket.bind", "/s")]
    assert _ops("sqlite3.connect", ":memory:") == []
    assert _ops("sqlite3.connect", "") == []
    assert _ops("sqlite3.connect", object()) == [
        ("write", "sqlite3.connect", unresolved)
    ]
    assert _ops("sqlite3.connect", "file:/d/x.db?mode=rwc") == [
        ("write", "sqlite3.connect", "/d/x.db")
    ]
    assert _ops("sqlite3.connect", "file:?mode=rw") == [
        ("write", "sqlite3.connect", unresolved)
    ]
    # read-only as a URI; without uri=True sqlite would create this file in the cwd
    assert _ops("sqlite3.connect", "file:x.db?mode=ro") == [
        ("write", "sqlite3.connect", f"{real}/file:x.db?mode=ro")
    ]
    assert _ops("ctypes.dlsym", None, 7) == []  # by ordinal: nothing to judge
    assert _ops("ctypes.dlsym", None, "strlen") == []
    assert _ops("ctypes.dlsym", None, "connect")[0][0] == "connect"
    [(kind, _, target)] = _ops("ctypes.dlsym", None, "unlink")
    assert kind == "write" and target.startswith("<unlink")
    assert not exclusive_is_private(unresolved, Access(writes=("fs:",)))
    # arguments no classifier can read fail closed, as the event's kind
    assert _ops("os.remove", object(), "not a dir_fd")[0][2] == unresolved
    assert _ops("os.remove", "x", object()) == [("write", "os.remove", f"{real}/x")]
    assert _ops("os.system") == [("spawn", "os.system", "")]
    assert _ops("socket.connect") == [("connect", "socket.connect", unresolved)]
    assert _ops("os.rename", "a") == [("write", "os.rename", unresolved)]
    assert _ops("os.fork", 1, 2) == [("spawn", "os.fork", "")]
    assert _ops("subprocess.Popen", None) == [("spawn", "subprocess.Popen", unresolved)]
    # a file key covers only below a "/", other namespaces keep ":" as a boundary
    assert covers("fs:/a/b", "fs:/a/b/c") and not covers("fs:/a/b", "fs:/a/b:c")
    assert covers("db:users", "db:users:1")
    # a declared directory with a trailing "/" covers the directory itself (its rmdir)
    assert covers("fs:/a/b/", "fs:/a/b") and covers("file:/a/b//", "fs:/a/b/c")
    assert covers("fs:/", "fs:/etc") and not covers("fs:/a/b/", "fs:/a/bc")


@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_a_thread_left_running_after_its_call_timed_out_is_stopped(
    audit: str, world: World, tmp_path: Path
) -> None:
    """Its result is out and its slot is free: warn can warn nobody, so it is stopped."""
    go, done = threading.Event(), threading.Event()
    refused: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda args: _reads(world), timeout=1)
    def lingering() -> str:
        """Writes only after its call has timed out."""
        go.wait(10)
        try:
            (world.base / "late").write_text("x")
        except PermissionError as exc:
            refused.append(str(exc))
        done.set()
        return "too late"

    events = Events()
    runner = ToolRunner(
        ToolRegistry([lingering]),
        state=make_state(tmp_path),
        on_event=events,
        audit=audit,  # type: ignore[arg-type]
    )
    result = await runner(call("l", "lingering"))
    assert result.is_error and "timed out" in result.text
    go.set()
    assert await anyio.to_thread.run_sync(done.wait, 10)
    assert not (world.base / "late").exists()
    assert refused and "late" in refused[0]
    assert events.of(DeclarationViolation) == []  # the call's events were already out


def _leave_scratch(w: World) -> None:
    with open(w.base / "outside" / "kept", "x") as f:
        f.write("x")


def _scratch_then_tree(w: World) -> None:
    fd, name = tempfile.mkstemp(dir=w.base / "outside")
    os.close(fd)
    os.remove(name)
    os.mkdir(name)  # the private name now holds a directory tree
    Path(name, "deep").write_text("x")


@pytest.mark.parametrize("audit", ["warn", "enforce"])
@pytest.mark.parametrize(
    "leave", [_leave_scratch, _scratch_then_tree], ids=["file", "tree"]
)
async def test_a_scratch_file_left_behind_beside_a_declared_file_is_a_violation(
    audit: str, leave: Callable[[World], None], world: World, tmp_path: Path
) -> None:
    """Let through as an atomic write's temp file; still there at the end, it was not."""
    access = Access(writes=(f"fs:{world.base}/outside/target",))
    events = Events()
    writer = _writer(access, lambda: leave(world))
    result = await audit_runner(tmp_path, [writer], audit, events)(call("w", "writer"))
    [violation] = events.of(DeclarationViolation)
    assert violation.target.startswith(f"{world.base}/outside/")
    assert "left behind" in violation.reason and not violation.blocked
    assert result.is_error is (audit == "enforce")


async def test_a_scratch_file_left_in_the_temp_dir_is_no_violation(
    world: World, tmp_path: Path
) -> None:
    made: list[str] = []
    events = Events()

    def leave() -> None:
        fd, name = tempfile.mkstemp(prefix="toolweave-test-")
        os.close(fd)
        made.append(name)

    writer = _writer(_reads(world), leave)
    try:
        result = await audit_runner(tmp_path, [writer], "enforce", events)(
            call("w", "writer")
        )
    finally:
        for name in made:
            os.remove(name)
    assert result.text == "done" and made
    assert events.of(DeclarationViolation) == []


async def test_creating_the_declared_file_itself_exclusively_is_no_leftover(
    world: World, tmp_path: Path
) -> None:
    """open(target, "x") of the very file declared: it is meant to stay."""
    target = world.base / "outside" / "target"
    events = Events()
    writer = _writer(Access(writes=(f"fs:{target}",)), lambda: target.open("x").close())
    result = await audit_runner(tmp_path, [writer], "enforce", events)(
        call("w", "writer")
    )
    assert result.text == "done", result.text
    assert target.exists()
    assert events.of(DeclarationViolation) == []
