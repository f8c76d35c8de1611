"""Issue 28 item 1 (the part built): writes declared from the parse, enforced by the kernel.

A command of read-only parts and ``mkdir`` / ``touch`` with literal operands
declares the paths it writes (`declared_writes`); the bash tool runs it
read-only everywhere but those grants, on both backends. The adversarial table
(item 4) holds commands whose real access is larger than their parse shows:
each is either not declared (a barrier, as before) or declared as what it
really touches (a symlink's target). Enforcement is shown with a declaration
made wrong on purpose: the extra write fails, end to end through `tw.Agent`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from builtin_support import run

import toolweave as tw
from toolweave._exceptions import ToolError
from toolweave.events import ToolResultReady
from toolweave.execution import (
    Hooks,
    PermissionMode,
    PreToolUseDecision,
    PreToolUseInput,
)
from toolweave.models import ScriptedModel
from toolweave.tools import Access, Concurrency, SandboxMode, SessionState
from toolweave.tools.builtin import BashTool
from toolweave.tools.builtin.bash import _tool as bash_module
from toolweave.tools.builtin.bash._writes import Declared, declared_writes
from toolweave.tools.builtin.sandbox import Grant, Sandbox
from toolweave.tools.builtin.sandbox import _sandbox as sandbox_module
from toolweave.tools.builtin.sandbox._sandbox import Backend, backend_available

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def ws() -> Iterator[Path]:
    """A git workspace: build/ (a file), src/a.py, a link to src/a.py, a hard link.

    Made in a scratch directory right under /tmp, not pytest's: Landlock's
    read confinement needs a rule per entry beside each ancestor of the
    workspace, and pytest's run directory holds one per test (thousands in a
    full run: past `MAX_ANCESTOR_ENTRIES` reads stay wide, as
    test_builtin_bash_declared_access covers).
    """
    base = Path(tempfile.mkdtemp(prefix="tw-writes-", dir="/tmp")).resolve()
    try:
        yield _workspace(base / "ws")
    finally:
        shutil.rmtree(base)


def _workspace(root: Path) -> Path:
    (root / "build").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "linked").mkdir()
    (root / "build" / "old.txt").write_text("old\n")
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "src" / "b.py").write_text("b = 1\n")
    os.symlink(root / "src" / "a.py", root / "alias.py")
    os.symlink(root / "src", root / "srclink")
    os.link(root / "src" / "b.py", root / "linked" / "b_again.py")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, timeout=30)
    return root


def _dir(path: Path) -> Grant:
    return Grant(str(path), "dir")


def _file(path: Path) -> Grant:
    return Grant(str(path), "file")


def test_declared_writes_are_what_the_kernel_will_allow(ws: Path) -> None:
    rows = {
        "mkdir -p build/out": (_dir(ws / "build"),),
        "mkdir -p build/out/deeper && ls build": (_dir(ws / "build"),),
        "touch src/a.py": (_file(ws / "src" / "a.py"),),
        "touch build/new.txt": (_dir(ws / "build"),),
        "touch -c src/a.py build/old.txt": (
            _file(ws / "build" / "old.txt"),
            _file(ws / "src" / "a.py"),
        ),
        "touch alias.py": (_file(ws / "src" / "a.py"),),  # the link's real target
        "mkdir build": (_dir(ws / "build"),),
        f"touch {ws}/src/a.py": (_file(ws / "src" / "a.py"),),
        "touch build/../src/a.py": (_file(ws / "src" / "a.py"),),
        # a file in a directory not there yet: creations under build/ cover it
        "mkdir -p build/out && touch build/out/f": (_dir(ws / "build"),),
        "cp src/a.py build/": (_dir(ws / "build"),),
    }
    for command, grants in rows.items():
        assert declared_writes(command, ws) == tuple(sorted(grants)), command


ADVERSARIAL = [
    "make",  # runs a Makefile: anything
    "sh build.sh",
    "./script",
    "echo src/a.py | xargs touch",
    "find . -name '*.py' -exec touch {} +",
    "touch *.py",  # a glob
    "touch $F",  # a variable
    "touch ~/x",  # outside the workspace
    'touch "$(echo src/a.py)"',
    "cd src && touch a.py",  # cd before a relative path
    "pushd src; touch a.py",
    "touch ../outside.txt",  # .. out of the workspace
    "touch /etc/passwd",
    "mkdir newdir",  # a creation in the root itself: the whole workspace
    "touch top.txt",
    "touch linked/b_again.py",  # a hard link: the write would change src/b.py
    "touch src/new.py",  # src/ holds src/b.py, hard-linked from linked/
    "touch srclink/c.py",  # through a link to src/: the same directory
    "mkdir -p linked/sub",  # a directory holding a hard link
    "touch .git/hooks/pre-commit",
    "mkdir -p .git/hooks/x",
    "touch -r src/a.py src/b.py",  # an option not on the list
    "touch -- src/a.py",
    "touch src/a.py > log.txt",  # a redirect: not declared here
    "rm src/a.py",  # src/ holds a hard-linked file (src/b.py)
    "sed -i s/a/b/ src/a.py",  # the same directory
    "mkdir -p build && rm -rf src",
    "touch src",  # a directory
    "x=1 touch src/a.py",
]


@pytest.mark.parametrize("command", ADVERSARIAL)
def test_adversarial_commands_are_not_declared_narrow(ws: Path, command: str) -> None:
    assert declared_writes(command, ws) is None


def test_a_nested_repository_is_never_granted(ws: Path) -> None:
    (ws / "build" / "vendor").mkdir()
    subprocess.run(
        ["git", "init", "-q"], cwd=ws / "build" / "vendor", check=True, timeout=30
    )
    assert declared_writes("mkdir -p build/out", ws) is None


@pytest.fixture(params=["landlock", "bwrap"])
def backend(request: pytest.FixtureRequest) -> Backend:
    name: Backend = request.param
    if not backend_available(name):
        pytest.skip(f"{name} is not available here")
    return name


def test_the_tool_declares_the_grants_as_write_keys_and_still_asks(
    ws: Path, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = BashTool(ws, sandbox_backend=backend)
    args = tool.parse({"command": "mkdir -p build/out"})
    assert tool.concurrency_for(args) is Concurrency.SAFE
    # mkdir reads nothing: its reads are confined to nothing (its grant aside)
    assert tool.access_for(args) == Access(
        reads=("proc:bash",), writes=(f"fs:{ws / 'build'}",)
    )
    declared = tool.access_for(args)
    assert declared is not None
    assert not declared.conflicts_with(Access(writes=(f"fs:{ws / 'src' / 'a.py'}",)))
    assert declared.conflicts_with(Access(reads=(f"fs:{ws / 'build' / 'old.txt'}",)))
    assert not declared.conflicts_with(Access(reads=(f"fs:{ws / 'src' / 'a.py'}",)))
    assert not declared.conflicts_with(Access(writes=("todo:",)))
    # a write is still a write for the permission stage
    check = anyio.run(tool.check_permissions, args, None)  # type: ignore[arg-type]
    assert check.behavior == "ask"
    # writes: true, or no backend: a barrier as before
    assert (
        tool.access_for(tool.parse({"command": "mkdir -p build/out", "writes": True}))
        is None
    )
    monkeypatch.setattr(sandbox_module, "backend_available", lambda _: False)
    unconfined = BashTool(ws, sandbox_backend=backend)
    assert unconfined.sandbox.backend_for(SandboxMode.READ_ONLY) is None
    assert unconfined.access_for(args) is None  # never trusted unenforced


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_the_kernel_allows_the_grants_and_refuses_the_rest(
    ws: Path, backend: Backend
) -> None:
    """At the sandbox itself: granted paths writable, every other path refused."""
    from toolweave.tools.builtin.bash._process import run_shell

    sandbox = Sandbox(ws, backend=backend)
    grants = (_dir(ws / "build"), _file(ws / "src" / "a.py"))
    script = (
        "mkdir -p build/out && echo made > build/out/f && echo a2 >> src/a.py && echo ok;"
        " echo x > src/b.py; echo y > linked/new.txt; rm build/old.txt; echo z > top.txt;"
        " mkdir newdir; true"
    )
    async with sandbox.confine(SandboxMode.READ_ONLY, ws, grants) as confined:
        outcome = await run_shell(
            script, cwd=ws, env=dict(os.environ), time_limit=30,
            max_output_bytes=100_000, spawn=confined.spawn,
        )  # fmt: skip
    assert "ok" in outcome.output, outcome.output
    assert (ws / "build" / "out" / "f").read_text() == "made\n"
    assert (ws / "src" / "a.py").read_text() == "a = 1\na2\n"
    assert (ws / "src" / "b.py").read_text() == "b = 1\n"
    assert not (ws / "linked" / "new.txt").exists()
    assert not (ws / "top.txt").exists() and not (ws / "newdir").exists()
    if backend == "landlock":  # no removal right under a creation grant
        assert (ws / "build" / "old.txt").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_declaration_that_moved_before_the_start_is_not_run(
    ws: Path, backend: Backend
) -> None:
    """The gate scheduled by the grants it was shown; a swapped link is refused."""
    os.symlink(ws / "build", ws / "out")
    tool = BashTool(ws, sandbox_backend=backend)
    args = tool.parse({"command": "touch out/made.txt"})
    assert tool.access_for(args) is not None  # declared: build/
    (ws / "out").unlink()
    os.symlink(ws / "src", ws / "out")  # now it would write src/
    with pytest.raises(
        ToolError, match="not run: the paths this command touches changed"
    ):
        await run(tool, {"command": "touch out/made.txt"}, SessionState(workspace=ws))
    assert not (ws / "src" / "made.txt").exists()
    assert not (ws / "build" / "made.txt").exists()


class BothInside:
    """Holds each call in its PreToolUse hook until all the others are inside too."""

    def __init__(self, *call_ids: str) -> None:
        self.events = {call_id: anyio.Event() for call_id in call_ids}

    async def hook(self, data: PreToolUseInput) -> PreToolUseDecision:
        mine = self.events.get(data.call.id)
        if mine is not None:
            mine.set()
            for event in self.events.values():
                await event.wait()
        return PreToolUseDecision()


def _turn(*calls: tw.ToolCall) -> tw.ModelResponse:
    return tw.ModelResponse(list(calls), stop_reason=tw.StopReason.TOOL_USE)


async def _agent_run(
    ws: Path,
    backend: Backend,
    script: list[tw.ModelResponse],
    together: tuple[str, ...] = ("t1", "t2"),
) -> dict[str, tw.ToolResult]:
    inside = BothInside(*together)
    hooks = Hooks()
    hooks.pre_tool_use("*")(inside.hook)
    agent = tw.Agent(
        ScriptedModel(script),
        tw.tools.coding_tools(ws, sandbox_backend=backend),
        config=tw.AgentConfig(
            workspace=ws, hooks=hooks, permission_mode=PermissionMode.BYPASS
        ),
    )
    results: dict[str, tw.ToolResult] = {}
    with anyio.fail_after(60):  # a serial schedule never passes the rendezvous
        async for event in agent.run_stream("go"):
            if isinstance(event, ToolResultReady):
                results[event.result.call_id] = event.result
    return results


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_declared_writer_overlaps_a_read_and_the_task_list_through_the_agent(
    ws: Path, backend: Backend
) -> None:
    """Before, any writing bash command was a barrier: this could never pass."""
    script = [
        _turn(
            tw.ToolCall("t1", "read", {"path": "src/a.py"}),
            tw.ToolCall(
                "t2", "bash", {"command": "mkdir -p build/out && touch build/made"}
            ),
            tw.ToolCall("t3", "todo_write", {"todos": []}),
        ),
        tw.ModelResponse([tw.Text("done")]),
    ]
    results = await _agent_run(ws, backend, script, ("t1", "t2", "t3"))
    assert not results["t2"].is_error, results["t2"].text
    assert (ws / "build" / "made").exists()
    assert (ws / "build" / "out").is_dir()
    assert "a = 1" in results["t1"].text


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_write_beyond_the_declaration_is_refused_through_the_agent(
    ws: Path, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A declaration made wrong on purpose (narrower than the command): the
    kernel refuses the extra write; the overlap still happened (rendezvous)."""
    monkeypatch.setattr(
        bash_module,
        "declared_access",
        lambda command, root: Declared((_dir(root / "build"),), None),
    )
    script = [
        _turn(
            tw.ToolCall("t1", "read", {"path": "src/b.py"}),
            tw.ToolCall(
                "t2",
                "bash",
                {"command": "touch build/ok; echo pwned > src/pwned.txt; :"},
            ),
        ),
        tw.ModelResponse([tw.Text("done")]),
    ]
    results = await _agent_run(ws, backend, script)
    assert (ws / "build" / "ok").exists()
    assert not (ws / "src" / "pwned.txt").exists()
    assert "src/pwned.txt" in results["t2"].text
    assert f"({backend})" in results["t2"].text  # the sandbox's note
    assert "writes were declared from its parse" in results["t2"].text
    assert '"writes": true' in results["t2"].text
