"""The declaration audit: each operation kind, in warn and enforce mode, attributed to its call."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lifecycle_helpers import Events, audit_runner, call, make_state

from toolweave._exceptions import ConfigError
from toolweave.events import DeclarationViolation
from toolweave.execution import ToolRunner
from toolweave.tools import Access, Concurrency, SessionState, ToolRegistry, tool

pytestmark = pytest.mark.anyio

THIS_FILE = __file__


@dataclass(frozen=True)
class Op:
    """One operation a tool performs on `base` (a fresh directory with `old` and `dir/`)."""

    name: str
    action: str
    kind: str  # write | spawn | connect
    run: Callable[[Path, tuple[str, int]], object]
    effect: Callable[[Path], bool]  # True once the operation took effect
    target: str  # what DeclarationViolation.target ends with


def _write(path: Path, mode: str, text: str = "") -> None:
    with open(path, mode) as f:
        f.write(text)


def _spawned(base: Path) -> bool:
    return (base / "spawned").exists()


_SPAWN = [sys.executable, "-c", "import sys; open(sys.argv[1], 'w').close()"]

OPS = [
    Op(
        "open-w",
        "open",
        "write",
        lambda b, a: _write(b / "new", "w"),
        lambda b: (b / "new").exists(),
        "/new",
    ),
    Op(
        "open-a",
        "open",
        "write",
        lambda b, a: _write(b / "old", "a", "x"),
        lambda b: (b / "old").read_text() == "oldx",
        "/old",
    ),
    Op(
        "open-r+",
        "open",
        "write",
        lambda b, a: _write(b / "old", "r+", "X"),
        lambda b: (b / "old").read_text() == "Xld",
        "/old",
    ),
    Op(
        "os.open-creat",
        "open",
        "write",
        lambda b, a: os.close(os.open(b / "new", os.O_WRONLY | os.O_CREAT)),
        lambda b: (b / "new").exists(),
        "/new",
    ),
    Op(
        "remove",
        "os.remove",
        "write",
        lambda b, a: os.remove(b / "old"),
        lambda b: not (b / "old").exists(),
        "/old",
    ),
    Op(
        "unlink",
        "os.remove",
        "write",
        lambda b, a: os.unlink(b / "old"),
        lambda b: not (b / "old").exists(),
        "/old",
    ),
    Op(
        "rename",
        "os.rename",
        "write",
        lambda b, a: os.rename(b / "old", b / "new"),
        lambda b: (b / "new").exists(),
        "/old",
    ),
    Op(
        "replace",
        "os.rename",
        "write",
        lambda b, a: os.replace(b / "old", b / "new"),
        lambda b: (b / "new").exists(),
        "/old",
    ),
    Op(
        "mkdir",
        "os.mkdir",
        "write",
        lambda b, a: os.mkdir(b / "made"),
        lambda b: (b / "made").exists(),
        "/made",
    ),
    Op(
        "rmdir",
        "os.rmdir",
        "write",
        lambda b, a: os.rmdir(b / "dir"),
        lambda b: not (b / "dir").exists(),
        "/dir",
    ),
    Op(
        "chmod",
        "os.chmod",
        "write",
        lambda b, a: os.chmod(b / "old", 0o600),
        lambda b: (b / "old").stat().st_mode & 0o777 == 0o600,
        "/old",
    ),
    Op(
        "truncate",
        "os.truncate",
        "write",
        lambda b, a: os.truncate(b / "old", 0),
        lambda b: (b / "old").read_text() == "",
        "/old",
    ),
    Op(
        "rmtree",
        "shutil.rmtree",
        "write",
        lambda b, a: shutil.rmtree(b / "dir"),
        lambda b: not (b / "dir").exists(),
        "/dir",
    ),
    Op(
        "move",
        "shutil.move",
        "write",
        lambda b, a: shutil.move(b / "old", b / "new"),
        lambda b: (b / "new").exists(),
        "/old",
    ),
    Op(
        "copy",
        "shutil.copyfile",
        "write",
        lambda b, a: shutil.copyfile(b / "old", b / "new"),
        lambda b: (b / "new").exists(),
        "/new",
    ),
    Op(
        "subprocess",
        "subprocess.Popen",
        "spawn",
        lambda b, a: subprocess.run([*_SPAWN, str(b / "spawned")], check=True),
        _spawned,
        str(Path("spawned")),
    ),
    Op(
        "os.system",
        "os.system",
        "spawn",
        lambda b, a: os.system(f"touch {b / 'spawned'}"),
        _spawned,
        "spawned",
    ),
    Op(
        "posix_spawn",
        "os.posix_spawn",
        "spawn",
        lambda b, a: os.waitpid(
            os.posix_spawn(sys.executable, [*_SPAWN, str(b / "spawned")], os.environ), 0
        ),
        _spawned,
        "spawned",
    ),
    Op(
        "connect",
        "socket.connect",
        "connect",
        lambda b, a: socket.create_connection(a, timeout=5).close(),
        lambda b: True,
        "",
    ),
]
# Only stopped, never let through: they would replace or copy the test process.
BLOCK_ONLY = [
    Op("fork", "os.fork", "spawn", lambda b, a: os.fork(), lambda b: False, ""),
    Op(
        "exec",
        "os.exec",
        "spawn",
        lambda b, a: os.execv(sys.executable, ["python"]),
        lambda b: False,
        "python",
    ),
]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "area"
    root.mkdir()
    (root / "old").write_text("old")
    (root / "dir").mkdir()
    return root.resolve()


@pytest.fixture
def listener() -> Iterator[tuple[str, int]]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()
    finally:
        server.close()


def _doer(op: Op, base: Path, address: tuple[str, int], access: Access) -> object:
    @tool(name="doer", concurrency=Concurrency.SAFE, access=lambda args: access)
    async def doer() -> str:
        """Do the operation."""
        op.run(base, address)
        return "done"

    return doer


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
async def test_warn_reports_and_lets_it_happen(
    op: Op, base: Path, listener: tuple[str, int], tmp_path: Path
) -> None:
    events = Events()
    doer = _doer(op, base, listener, Access(reads=(f"fs:{base}",)))
    runner = audit_runner(tmp_path, [doer], "warn", events)
    result = await runner(call("c1", "doer"))
    assert not result.is_error, result.text
    assert op.effect(base)
    violations = events.of(DeclarationViolation)
    assert violations, "nothing reported"
    first = violations[0]
    assert (first.call_id, first.tool, first.operation) == ("c1", "doer", op.action)
    assert first.target.endswith(op.target)
    assert first.source.startswith(THIS_FILE + ":")
    assert not first.blocked
    assert "SAFE call that declares no writes" in first.reason


@pytest.mark.parametrize("op", OPS + BLOCK_ONLY, ids=lambda op: op.name)
async def test_enforce_stops_it_before_it_happens(
    op: Op, base: Path, listener: tuple[str, int], tmp_path: Path
) -> None:
    events = Events()
    doer = _doer(op, base, listener, Access(reads=(f"fs:{base}",)))
    runner = audit_runner(tmp_path, [doer], "enforce", events)
    result = await runner(call("c1", "doer"))
    assert result.is_error
    assert "Blocked by the declaration audit" in result.text
    assert op.action in result.text
    if op.kind != "connect":
        assert not op.effect(base)
    if op.kind == "write":
        assert (base / "old").read_text() == "old"
    violations = events.of(DeclarationViolation)
    assert [v.operation for v in violations][:1] == [op.action]
    assert violations[0].blocked


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
async def test_a_declaration_that_covers_it_is_no_violation(
    op: Op, base: Path, listener: tuple[str, int], tmp_path: Path
) -> None:
    events = Events()
    access = {
        "write": Access(writes=(f"fs:{base}",)),
        "spawn": Access(reads=("proc:test",)),
        "connect": Access(reads=("net:127.0.0.1",)),
    }[op.kind]
    doer = _doer(op, base, listener, access)
    runner = audit_runner(tmp_path, [doer], "enforce", events)
    result = await runner(call("c1", "doer"))
    assert not result.is_error, result.text
    assert op.effect(base)
    assert events.of(DeclarationViolation) == []


async def test_off_sees_nothing(base: Path, tmp_path: Path) -> None:
    events = Events()
    doer = _doer(OPS[0], base, ("127.0.0.1", 9), Access())
    runner = audit_runner(tmp_path, [doer], "off", events)
    result = await runner(call("c1", "doer"))
    assert not result.is_error
    assert events.of(DeclarationViolation) == []


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="audit must be one of"):
        ToolRunner(ToolRegistry([]), state=SessionState(), audit="loud")  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["warn", "enforce"])
async def test_a_call_cancelled_after_a_breach_still_reports_it(
    base: Path, tmp_path: Path, mode: str
) -> None:
    """Breaches are reported once the call is over, also when it was cancelled."""
    import anyio

    wrote = anyio.Event()

    @tool(concurrency=Concurrency.SAFE, access=Access(reads=(f"fs:{base}",)))
    async def writer() -> str:
        """Write a file it did not declare, then wait to be cancelled."""
        with contextlib.suppress(PermissionError):  # enforce: stopped, still a breach
            _write(base / "new", "w")
        wrote.set()
        await anyio.sleep_forever()
        return "unreachable"

    events = Events()
    runner = ToolRunner(
        ToolRegistry([writer]),
        state=make_state(tmp_path),
        audit=mode,  # type: ignore[arg-type]
        on_event=events,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(runner, call("c1", "writer"))
        await wrote.wait()
        tg.cancel_scope.cancel()
    violations = events.of(DeclarationViolation)
    assert [v.call_id for v in violations] == ["c1"]
    assert violations[0].target.endswith("/new")
