"""The declaration audit's pure parts: event classification, path keys, the rules."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

from toolweave._exceptions import ConfigError
from toolweave._native.threads import abandoning_threads
from toolweave.execution._audit import Auditor, _settle, check_audit_mode
from toolweave.execution._audit_hook import (
    AuditScope,
    Breach,
    _function_file,
    _hook,
    ensure_installed,
)
from toolweave.execution._audit_hook import code_files as _code_files
from toolweave.execution._audit_ops import Operation, classify_event
from toolweave.execution._audit_rules import covers, effective_access, rule_broken
from toolweave.execution._execute import Executed
from toolweave.tools import Access, Concurrency, Tool, WrappedTool, tool

SAFE, SEQ = Concurrency.SAFE, Concurrency.SEQUENTIAL


def _one(event: str, *args: object) -> Operation:
    [op] = classify_event(event, args)
    return op


@pytest.mark.parametrize(
    ("event", "args", "expected"),
    [
        ("open", ("/a/b", "r", os.O_RDONLY), ()),
        ("open", ("/a/b", "rb", -1), ()),  # no flags: judged by the mode
        ("open", ("/a/b", None, None), ()),
        ("open", (5, "w", os.O_WRONLY), ()),  # an fd: its own open was audited
        ("compile", (b"", "x"), ()),
        ("os.listdir", ("/a",), ()),
    ],
)
def test_events_that_change_nothing(
    event: str, args: tuple[object, ...], expected: tuple[()]
) -> None:
    assert classify_event(event, args) == expected


def test_open_by_mode_when_flags_are_missing() -> None:
    assert _one("open", "/a/b", "a", -1).kind == "write"
    assert _one("open", "/a/b", "x", -1).exclusive
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    assert _one("open", "/a/b", None, flags).exclusive


def test_paths_are_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path.resolve()
    (real / "d").mkdir()
    os.symlink(real / "d", real / "link")
    monkeypatch.chdir(real)
    assert _one("os.remove", "rel", -1).target == f"{real}/rel"
    assert _one("os.remove", b"rel", -1).target == f"{real}/rel"
    assert _one("os.remove", Path("rel"), None).target == f"{real}/rel"
    # the parent is resolved, the last component is not (removing a link names the link)
    assert _one("os.remove", f"{real}/link/x", -1).target == f"{real}/d/x"
    assert _one("os.remove", f"{real}/link", -1).target == f"{real}/link"
    assert _one("os.remove", "/", -1).target == "/"
    fd = os.open(real / "d", os.O_RDONLY)
    try:
        assert _one("os.remove", "x", fd).target == f"{real}/d/x"
        assert _one("os.chmod", fd, 0o600, None).target == f"{real}/d"
    finally:
        os.close(fd)
    assert _one("os.remove", "x", 999_999).target == "<unresolved path>"
    assert _one("os.remove", object(), -1).target == "<unresolved path>"
    # a mkdir of what exists changes nothing; of what does not, it is a write
    assert classify_event("os.mkdir", (str(real / "d"), 0o777, -1)) == ()
    assert _one("os.mkdir", "new", 0o777, -1).target == f"{real}/new"
    assert _one("os.truncate", 999_999, 0).target == "<unresolved path>"


def test_two_ended_and_destination_operations() -> None:
    ops = classify_event("os.rename", ("/a/x", "/a/y", -1, -1))
    assert [o.target for o in ops] == ["/a/x", "/a/y"]
    ops = classify_event("shutil.move", ("/a/x", "/a/y"))
    assert [o.target for o in ops] == ["/a/x", "/a/y"]
    assert _one("shutil.copytree", "/a/x", "/a/y").target == "/a/y"
    assert _one("os.symlink", "/a/x", "/a/y", -1).target == "/a/y"


@pytest.mark.parametrize(
    ("event", "args", "target"),
    [
        ("subprocess.Popen", ("ls", ["ls", "-l"], None, None), "ls -l"),
        ("subprocess.Popen", ("ls", None, None, None), "ls"),
        ("subprocess.Popen", (None, "ls -l", None, None), "ls -l"),
        ("subprocess.Popen", (None, [b"ls", Path("x")], None, None), "ls x"),
        ("subprocess.Popen", (None, 7, None, None), "7"),
        ("os.system", (b"true",), "true"),
        ("os.exec", ("/bin/true", ["true"], None), "true"),
        ("os.posix_spawn", ("/bin/true", ("true", "-x"), {}), "true -x"),
        ("os.spawn", (0, "/bin/true", ["true"], {}), "true"),
        ("os.fork", (), ""),
        ("pty.spawn", (["sh"],), "sh"),
        ("socket.connect", (None, ("127.0.0.1", 80)), "127.0.0.1:80"),
        ("socket.connect", (None, "/run/x.sock"), "/run/x.sock"),
        ("socket.connect", (None, b"/run/x.sock"), "/run/x.sock"),
        ("socket.sendto", (None, ("::1", 53, 0, 0)), "::1:53"),
    ],
)
def test_spawn_and_connect_targets(
    event: str, args: tuple[object, ...], target: str
) -> None:
    op = _one(event, *args)
    assert (op.action, op.target) == (event, target)


RULES = [
    # (op, concurrency, access, allowed?)
    (Operation("write", "open", "/w/a.py"), SAFE, Access(writes=("fs:/w",)), True),
    (
        Operation("write", "open", "/w/a.py"),
        SAFE,
        Access(writes=("file:/w/a.py",)),
        True,
    ),
    (Operation("write", "open", "/w/a.py"), SAFE, Access(writes=("fs:",)), True),
    (Operation("write", "open", "/w/a.py"), SAFE, Access(writes=("*",)), True),
    (Operation("write", "open", "/wx/a.py"), SAFE, Access(writes=("fs:/w",)), False),
    (Operation("write", "open", "/w/a.py"), SAFE, Access(reads=("fs:/w",)), False),
    (Operation("write", "open", "/w/a.py"), SEQ, Access(writes=("db:w",)), False),
    (Operation("write", "open", "/w/__pycache__/a.pyc"), SAFE, Access(), True),
    (Operation("write", "os.mkdir", "/w/__pycache__"), SAFE, Access(), True),
    (Operation("write", "open", "/dev/null"), SAFE, Access(), True),
    (Operation("write", "open", "/dev/nullx"), SAFE, Access(), False),
    (Operation("spawn", "os.system", "ls"), SAFE, Access(reads=("proc:ls",)), True),
    (Operation("spawn", "os.system", "ls"), SEQ, Access(writes=("fs:/w",)), False),
    (Operation("spawn", "os.system", "ls"), SEQ, Access.barrier(), True),
    (
        Operation("connect", "socket.connect", "1:2"),
        SAFE,
        Access(reads=("net:x",)),
        True,
    ),
    (Operation("connect", "socket.connect", "1:2"), SAFE, Access.read_all(), False),
]


@pytest.mark.parametrize(("op", "concurrency", "access", "allowed"), RULES)
def test_rules(
    op: Operation, concurrency: Concurrency, access: Access, allowed: bool
) -> None:
    reason = rule_broken(op, concurrency, access, set())
    assert (reason is None) is allowed, reason
    if reason is not None and concurrency is SEQ:
        assert "does not cover" in reason


def test_a_private_path_and_what_lies_below_it() -> None:
    op = Operation("write", "os.remove", "/t/tmp1/x")
    assert rule_broken(op, SAFE, Access(), {"/t/tmp1"}) is None
    assert rule_broken(op, SAFE, Access(), {"/t/tmp"}) is not None


def test_keys_cover_only_below_a_boundary() -> None:
    assert covers("fs:/a", "fs:/a/b") and covers("fs:/a/", "fs:/a/b")
    assert not covers("fs:/a", "fs:/ab") and not covers("fs:/a/b", "fs:/a")


def test_undeclared_access_is_what_the_scheduler_assumed() -> None:
    assert effective_access(SAFE, None) == Access.read_all()
    assert effective_access(SEQ, None) == Access.barrier()
    assert effective_access(SAFE, Access()) == Access()


def test_modes() -> None:
    assert [check_audit_mode(m) for m in ("off", "warn", "enforce")] == [
        "off",
        "warn",
        "enforce",
    ]
    with pytest.raises(ConfigError):
        check_audit_mode("on")


def _plain() -> None:
    """A plain function (its docstring is what functools.wraps copies)."""


def test_the_tools_own_code_files() -> None:
    @tool
    def fn_tool() -> None:
        """A function tool."""

    @tool
    @functools.wraps(_plain)
    def wrapped_fn() -> None:
        """A decorated function."""

    class Custom(Tool):
        async def call(self, args: dict[str, object], ctx: object) -> str:
            return ""

    from pydantic import BaseModel

    custom = Custom(name="c", description="", input_model=BaseModel)
    assert _code_files(fn_tool) == {__file__}
    assert _code_files(custom) == {__file__}
    assert _code_files(WrappedTool(custom)) >= {__file__}
    assert _function_file(functools.partial(_plain)) == __file__
    assert _code_files(Tool(name="t", description="", input_model=BaseModel)) != set()
    del wrapped_fn


@tool(name="t", concurrency=SAFE, access=Access())
async def _elsewhere() -> None:
    """A tool whose own code is not on the stack in these tests."""


def _scope(*, enforce: bool = True) -> AuditScope:
    scope = AuditScope("c", _elsewhere, {}, enforce)
    scope._learn().files = frozenset({"/nowhere.py"})
    return scope


def test_settle_names_at_most_three_breaches_and_keeps_the_tools_error() -> None:
    scope = _scope()
    op = Operation("write", "open", "/x")
    scope._learn().breaches.extend(Breach(op, "r", "", True) for _ in range(5))
    settled = _settle(scope, Executed(error="OSError: boom"))
    assert settled.error is not None
    assert "(and 2 more)" in settled.error
    assert settled.error.endswith("The tool then failed with: OSError: boom")
    assert _settle(_scope(enforce=False), Executed(output="fine")).output == "fine"


def test_the_source_falls_back_to_the_innermost_user_frame() -> None:
    scope = _scope(enforce=False)
    scope.observe(Operation("write", "open", "/x"), sys._getframe())
    [breach] = scope.breaches
    assert breach.source.startswith(__file__ + ":")
    assert "open /x at " in breach.describe("t")
    scope = _scope(enforce=False)
    scope.observe(Operation("write", "open", "/x"), None)
    assert scope.breaches[0].source == ""
    assert scope.breaches[0].describe("t") == "t: open /x — " + scope.breaches[0].reason


@pytest.mark.anyio
async def test_an_auditor_that_is_off_only_awaits() -> None:
    async def work() -> Executed:
        return Executed(output="x")

    auditor = Auditor("off")
    result = await auditor.run(_elsewhere, None, {}, work(), None)  # type: ignore[arg-type]
    assert result.output == "x"


def test_the_hook_fails_closed_on_arguments_it_cannot_read() -> None:
    """Malformed arguments are an operation on an unknown target, not a free pass."""
    ensure_installed()
    ensure_installed()  # idempotent
    scope = _scope()
    with abandoning_threads(scope):
        with pytest.raises(PermissionError, match="unresolved path"):
            _hook("open", ())
        _hook("unrelated.event", ())
    assert [b.op.target for b in scope.breaches] == ["<unresolved path>"]


def test_the_hook_never_breaks_an_operation_for_its_own_fault() -> None:
    """A failure of the audit itself (not a refusal) lets the operation go on."""

    class Broken(AuditScope):
        def observe(self, op: Operation, frame: object) -> None:
            raise RuntimeError("the audit's own bug")

    with abandoning_threads(Broken("c", _elsewhere, {}, True)):
        _hook("os.remove", ("/x", -1))


def test_audit_off_installs_no_hook() -> None:
    """A hook can never be removed: with the audit off nothing is installed at all."""
    import subprocess

    program = """
import anyio
from toolweave.execution import ToolRunner
from toolweave.execution import _audit_hook
from toolweave.messages import ToolCall
from toolweave.tools import Access, Concurrency, SessionState, ToolRegistry, tool

@tool(concurrency=Concurrency.SAFE, access=Access())
async def echo(text: str) -> str:
    '''Echo.'''
    return text

async def main() -> None:
    runner = ToolRunner(ToolRegistry([echo]), state=SessionState())
    assert (await runner(ToolCall("c", "echo", {"text": "x"}))).text == "x"
    print(_audit_hook._installed)
    ToolRunner(ToolRegistry([echo]), state=SessionState(), audit="warn")
    print(_audit_hook._installed)

anyio.run(main)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]


def test_the_mode_here_and_stepping_outside_the_audit() -> None:
    from toolweave.execution._audit import audit_mode_here, outside_audit

    assert audit_mode_here() == "off"
    with outside_audit():  # outside any call: nothing to step out of
        assert audit_mode_here() == "off"
    for enforce, mode in ((True, "enforce"), (False, "warn")):
        with abandoning_threads(_scope(enforce=enforce)):
            assert audit_mode_here() == mode
            with outside_audit():
                assert audit_mode_here() == "off"
            assert audit_mode_here() == mode


def test_the_audit_scope_is_the_calls_thread_zone_and_keeps_its_abandon_rule() -> None:
    """One context variable carries both: the zone's rule is the one around, unless told."""
    from toolweave._native.threads import AbandonRecord, abandons_here
    from toolweave.execution._audit import outside_audit

    assert not AuditScope("c", _elsewhere, {}, False).abandons  # no zone around
    with abandoning_threads():  # a deadline around (the Dispatcher's ceiling)
        scope = AuditScope("c", _elsewhere, {}, False)
        assert scope.abandons
        with abandoning_threads(scope):
            assert abandons_here()
            with outside_audit():  # stepping out keeps the thread rule
                assert abandons_here()
    with abandoning_threads(AbandonRecord(abandons=False)):
        assert not AuditScope("c", _elsewhere, {}, False).abandons
        assert AuditScope("c", _elsewhere, {}, False, abandons=True).abandons
