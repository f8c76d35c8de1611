"""Issue 28 items 1-4: every writer's targets and every known reader's paths, declared and enforced.

Each writer row runs twice from identical workspaces: under the real
``bash -c`` (unconfined) and under the bash tool, on both backends, after the
tool declared it as the gate would (`access_for`): the trees, the repository
and the output must come out the same. The reader rows prove the same for
commands whose reads are confined to their path operands.

A confined command that reaches outside its declared set is refused on both
backends: ``grep -R`` following a symlink to an undeclared file, a
pre-commit hook writing outside ``.git``; through `tw.Agent` too, where
``writes: true`` then runs it as a barrier and it succeeds.

The adversarial table (item 4) holds commands whose real access is larger than
their parse shows; each row states which way it is made safe (``wide``: not
declared narrow, so the tool runs it as before; ``confined``: declared, and
the extra access fails) and runs under real bash and under the tool.
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
from toolweave.tools import Concurrency, SessionState
from toolweave.tools.builtin import BashTool
from toolweave.tools.builtin.bash._writes import Declared, declared_access
from toolweave.tools.builtin.sandbox import Grant
from toolweave.tools.builtin.sandbox import _confine as confine_module
from toolweave.tools.builtin.sandbox._sandbox import Backend, backend_available

pytestmark = pytest.mark.timeout(120)

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, **_GIT_ENV, "HOME": str(home)}


def _workspace(at: Path) -> Path:
    """src/ (two files), build/ (a file and a subdirectory), notes/, docs/ with a
    link to the root's secret.txt; a git repository with everything committed."""
    root = at.resolve()
    for sub in ("src", "build/sub", "notes", "docs"):
        (root / sub).mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "src" / "b.py").write_text("b = 2\n")
    (root / "build" / "old.txt").write_text("old\n")
    (root / "build" / "sub" / "x.o").write_text("obj\n")
    (root / "notes" / "n.txt").write_text("note\n")
    (root / "docs" / "d.md").write_text("# doc\n")
    (root / "secret.txt").write_text("SECRET\n")
    os.symlink("../secret.txt", root / "docs" / "leak")
    env = _env(at.parent)
    for argv in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=root, env=env, check=True, timeout=30)
    return root


def _snapshot(root: Path) -> dict[str, object]:
    """Everything but .git's insides: content, link targets, directories; the repo's state."""
    seen: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                seen[rel] = "dir"
            else:
                seen[rel] = path.read_bytes()
    for argv in (["rev-parse", "HEAD"], ["ls-files", "-s"]):
        seen[" ".join(argv)] = subprocess.run(
            ["git", *argv], cwd=root, capture_output=True, check=True, timeout=30
        ).stdout
    return seen


@pytest.fixture(params=["landlock", "bwrap"])
def backend(request: pytest.FixtureRequest) -> Backend:
    name: Backend = request.param
    if not backend_available(name):
        pytest.skip(f"{name} is not available here")
    return name


@pytest.fixture
def base() -> Iterator[Path]:
    """A scratch directory right under /tmp, not pytest's: Landlock's read
    confinement needs a rule per entry beside each ancestor of the workspace,
    and pytest's run directory holds one per test (thousands in a full run:
    past `MAX_ANCESTOR_ENTRIES`, reads stay wide, which
    `test_too_crowded_ancestors_keep_reads_wide` covers)."""
    made = Path(tempfile.mkdtemp(prefix="tw-access-", dir="/tmp")).resolve()
    yield made
    shutil.rmtree(made)


@pytest.fixture
def pair(base: Path) -> tuple[Path, Path]:
    """Two identical workspaces: one for real bash, one for the tool."""
    return _workspace(base / "a" / "ws"), _workspace(base / "b" / "ws")


def _real_bash(command: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=root,
        env=_env(root.parent),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def _tool_run(command: str, root: Path, backend: Backend) -> tuple[str, Declared]:
    """Declare `command` as the gate would (it must be declared), then run it."""
    tool = BashTool(root, sandbox_backend=backend, env=_env(root.parent))
    args = tool.parse({"command": command})
    assert tool.concurrency_for(args) is Concurrency.SAFE, command
    assert tool.access_for(args) is not None
    declared = declared_access(command, root)
    assert declared is not None, command
    text = await run(tool, {"command": command}, SessionState(workspace=root))
    return str(text), declared


WRITERS = [
    "echo hi > build/new.txt",
    "echo more >> build/old.txt",
    "ls src nothing-here 2> build/err.txt; true",
    "cat src/a.py | tee build/copy.py",
    "cat src/a.py | tee -a build/old.txt",
    "cp src/a.py build/",
    "cp -r src build/src2",
    "cp src/a.py build/old.txt",
    "mv build/old.txt build/renamed.txt",
    "mv notes/n.txt build/",
    "rm build/old.txt",
    "rm -rf build/sub",
    "ln -s ../src/a.py build/a_link",
    "sed -i s/1/42/ src/a.py",
    "sed -i -e s/b/c/ src/b.py && cat src/b.py",
    "mkdir -p build/out && echo done > build/out/f.txt",
    "echo x >> src/a.py && git add src/a.py && git commit -qm change",
    "echo y > notes/m.txt && git add notes && git commit -q -m 'add m'",
]


def test_writer_declarations_are_what_the_kernel_will_allow(base: Path) -> None:
    ws = _workspace(base / "ws")

    def grants(command: str) -> tuple[Grant, ...] | None:
        declared = declared_access(command, ws)
        return None if declared is None else declared.grants

    build, src = str(ws / "build"), str(ws / "src")
    assert grants("echo hi > build/new.txt") == (Grant(build, "dir"),)
    assert grants("echo more >> build/old.txt") == (Grant(f"{build}/old.txt", "file"),)
    assert grants("cp src/a.py build/") == (Grant(build, "dir"),)
    assert grants("mv build/old.txt build/renamed.txt") == (Grant(build, "tree"),)
    assert grants("mv notes/n.txt build/") == (
        Grant(build, "tree"),
        Grant(str(ws / "notes"), "tree"),
    )
    assert grants("rm -rf build/sub") == (Grant(build, "tree"),)
    assert grants("sed -i s/1/42/ src/a.py") == (Grant(src, "tree"),)
    assert grants("ln -s ../src/a.py build/a_link") == (Grant(build, "tree"),)
    assert grants("git add src && git commit -qm m") == (
        Grant(str(ws / ".git"), "git"),
    )
    # reads: the operands of known readers, nothing for pure writers, else wide
    cp = declared_access("cp src/a.py build/", ws)
    assert cp is not None and cp.reads == (f"{src}/a.py",)
    rm = declared_access("rm build/old.txt", ws)
    assert rm is not None and rm.reads == ()
    git = declared_access("git add src && git commit -qm m", ws)
    assert git is not None and git.reads is None


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("command", WRITERS)
async def test_each_declared_writer_does_under_the_tool_what_bash_does(
    pair: tuple[Path, Path], backend: Backend, command: str
) -> None:
    real, confined = pair
    done = _real_bash(command, real)
    assert done.returncode == 0, done.stderr
    text, declared = await _tool_run(command, confined, backend)
    assert declared.grants, command  # it ran with only its grants writable
    assert _snapshot(confined) == _snapshot(real)
    assert text.strip() == (done.stdout.strip() or "(no output)")


READERS = [
    "cat src/a.py",
    "grep -n a src/a.py src/b.py",
    "grep -r b src",
    "ls src build",
    "wc -l src/a.py < src/b.py",
    "head -1 notes/n.txt | cat",
    "git log --oneline",
    "cat src/a.py secret.txt",
    "diff src/a.py src/a.py",
    "find src -name '*.py'",
]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("command", READERS)
async def test_each_confined_reader_reads_what_bash_reads(
    pair: tuple[Path, Path], backend: Backend, command: str
) -> None:
    real, confined = pair
    done = _real_bash(command, real)
    assert done.returncode == 0, done.stderr
    text, declared = await _tool_run(command, confined, backend)
    assert declared.reads is not None and str(confined) not in declared.reads
    assert text.strip() == (done.stdout.strip() or "(no output)")


def _hook(root: Path) -> None:
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho hooked > hooked.txt\n")
    hook.chmod(0o755)


REACHES_OUT = {
    # a symlink inside a declared directory, to a file the parse never named
    "grep -R SECRET docs": lambda root: None,
    # a pre-commit hook writing outside .git
    "git commit -q --allow-empty -m x": _hook,
}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("command", sorted(REACHES_OUT))
async def test_a_confined_command_reaching_outside_its_set_is_refused(
    pair: tuple[Path, Path], backend: Backend, command: str
) -> None:
    real, confined = pair
    for root in pair:
        REACHES_OUT[command](root)
    head = _snapshot(confined)["rev-parse HEAD"]
    done = _real_bash(command, real)
    assert done.returncode == 0, done.stderr  # bash reaches it: the access is real
    with pytest.raises(ToolError) as refused:
        await _tool_run(command, confined, backend)
    text = str(refused.value)
    assert "SECRET" not in text
    assert f"({backend})" in text and '"writes": true' in text  # the sandbox's note
    assert not (confined / "hooked.txt").exists()
    assert _snapshot(confined)["rev-parse HEAD"] == head  # no commit was made


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_read_only_session_grants_nothing(base: Path, backend: Backend) -> None:
    ws = _workspace(base / "ws")
    tool = BashTool(ws, sandbox="read-only", sandbox_backend=backend)
    args = tool.parse({"command": "echo hi > build/new.txt"})
    assert tool.concurrency_for(args) is Concurrency.SEQUENTIAL
    assert tool.access_for(args) is None
    with pytest.raises(ToolError):
        await run(
            tool, {"command": "echo hi > build/new.txt"}, SessionState(workspace=ws)
        )
    assert not (ws / "build" / "new.txt").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_too_crowded_ancestors_keep_reads_wide(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Landlock: declared reads are only trusted where the rules can be built;
    should the ancestors grow past the limit after the probe, nothing runs."""
    if not backend_available("landlock"):
        pytest.skip("landlock is not available here")
    ws = _workspace(base / "ws")
    confined = BashTool(ws, sandbox_backend="landlock")
    args = confined.parse({"command": "cat src/a.py"})
    assert confined.access_for(args) is not None
    assert confined.access_for(args).reads == (f"fs:{ws / 'src' / 'a.py'}", "proc:bash")  # type: ignore[union-attr]
    monkeypatch.setattr(confine_module, "MAX_ANCESTOR_ENTRIES", 0)
    crowded = BashTool(ws, sandbox_backend="landlock")
    access = crowded.access_for(crowded.parse({"command": "cat src/a.py"}))
    assert access is not None and access.reads == (f"fs:{ws}", "proc:bash")
    with pytest.raises(ToolError, match="could not be started"):  # probed before
        await run(confined, {"command": "cat src/a.py"}, SessionState(workspace=ws))


# -- item 4: commands whose real access is larger than their parse ----------------

ADVERSARIAL = [
    # (command, "wide" = not declared narrow, or "confined" = the extra access fails)
    ("make -s", "wide"),  # a Makefile: anything
    ("sh build.sh", "wide"),  # a script
    ("./build.sh", "wide"),
    ("echo build/old.txt | xargs rm", "wide"),
    ("find build -name '*.txt' -exec rm {} +", "wide"),
    ("rm build/*.txt", "wide"),  # a glob
    ("F=build/old.txt; rm $F", "wide"),  # a variable
    ("cd build && rm old.txt", "wide"),  # cd before a relative path
    ("rm ../outside.txt", "wide"),  # .. out of the workspace
    ("cat docs/leak", "wide"),  # a symlink: reads stay the whole workspace
    ("sed -i s/S/s/ docs/leak", "wide"),  # sed -i would replace the link
    ("echo x >> hard/again.txt", "wide"),  # a hard link to notes/n.txt
    ("rm hard/other.txt", "wide"),  # a directory holding a hard link
    ("ln notes/n.txt build/hard", "wide"),  # a hard link would be a second name
    ("echo x > top.txt", "wide"),  # the workspace root: .git with it
    ("cat build/../secret.txt", "wide"),  # .. through a directory not declared
    ("grep -R SECRET docs", "confined"),  # the link's target is refused
    ("cat docs/d.md; cat secret.txt", "confined"),  # both named: both declared
]


def _adversarial_setup(root: Path) -> None:
    (root / "Makefile").write_text("all:\n\techo made > src/made.txt\n")
    (root / "build.sh").write_text("#!/bin/sh\necho built > src/built.txt\n")
    (root / "build.sh").chmod(0o755)
    (root.parent / "outside.txt").write_text("outside\n")
    (root / "hard").mkdir()
    os.link(root / "notes" / "n.txt", root / "hard" / "again.txt")
    (root / "hard" / "other.txt").write_text("other\n")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(("command", "how"), ADVERSARIAL)
async def test_adversarial_access_is_declared_wide_or_confined(
    pair: tuple[Path, Path], backend: Backend, command: str, how: str
) -> None:
    real, confined = pair
    for root in pair:
        _adversarial_setup(root)
    declared = declared_access(command, confined)
    done = _real_bash(command, real)
    tool = BashTool(confined, sandbox_backend=backend, env=_env(confined.parent))
    args = tool.parse({"command": command})
    access = tool.access_for(args)
    if how == "wide":
        # not declared narrow: a barrier, or a reader of the whole workspace
        assert access is None or f"fs:{confined}" in access.reads, access
        assert declared is None or declared.reads is None
        try:
            text = await run(
                tool, {"command": command}, SessionState(workspace=confined)
            )
        except ToolError as exc:
            text = str(exc)
        assert done.stdout.strip() in str(text)
        # outside the workspace, workspace-write refuses what bash did
        assert (confined.parent / "outside.txt").exists()
        assert _snapshot(confined) == _snapshot(real)  # inside, ran as bash runs it
        return
    assert declared is not None and declared.reads is not None
    assert access is not None and f"fs:{confined}" not in access.reads
    reads = [k.removeprefix("fs:") for k in access.reads if k.startswith("fs:")]
    try:
        text = str(
            await run(tool, {"command": command}, SessionState(workspace=confined))
        )
        refused = False
    except ToolError as exc:
        text, refused = str(exc), True
    secret = str(confined / "secret.txt")
    if secret in reads:  # named by the command: declared, and read as bash reads it
        assert not refused and text.strip() == done.stdout.strip()
    else:  # reached through a link the parse cannot see: refused
        assert "SECRET" in done.stdout and "SECRET" not in text and refused


# -- end to end through tw.Agent ----------------------------------------------------


class AllInside:
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


async def _agent(
    ws: Path,
    backend: Backend,
    script: list[tw.ModelResponse],
    together: tuple[str, ...],
) -> dict[str, tw.ToolResult]:
    inside = AllInside(*together)
    hooks = Hooks()
    hooks.pre_tool_use("*")(inside.hook)
    tools = tw.tools.coding_tools(ws, sandbox_backend=backend)
    for tool in tools:
        if isinstance(tool, BashTool):
            tool.env.update(_env(ws.parent))
    agent = tw.Agent(
        ScriptedModel(script),
        tools,
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
async def test_confined_readers_and_writers_overlap_workspace_writes_through_the_agent(
    base: Path, backend: Backend
) -> None:
    """Before, a read-only bash call read the whole workspace and waited for any
    write there, and sed -i / rm / > were barriers: this could never pass."""
    ws = _workspace(base / "ws")
    script = [
        _turn(
            tw.ToolCall("t1", "write", {"path": "notes/new.txt", "content": "n\n"}),
            tw.ToolCall("t2", "bash", {"command": "cat src/a.py"}),
            tw.ToolCall("t3", "bash", {"command": "sed -i s/1/42/ src/a.py"}),
            tw.ToolCall("t4", "bash", {"command": "rm build/old.txt > build/log"}),
        ),
        tw.ModelResponse([tw.Text("done")]),
    ]
    # t2 reads src/a.py, which t3 writes: they stay in call order (t2 first)
    results = await _agent(ws, backend, script, ("t1", "t2", "t4"))
    assert all(not r.is_error for r in results.values()), results
    assert results["t2"].text.strip() == "a = 1"
    assert (ws / "src" / "a.py").read_text() == "a = 42\n"
    assert (ws / "notes" / "new.txt").read_text() == "n\n"
    assert not (ws / "build" / "old.txt").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_reaching_outside_is_refused_and_writes_true_runs_it_through_the_agent(
    base: Path, backend: Backend
) -> None:
    """One refused bash call per turn: a failing bash call aborts its running
    bash siblings (as in Claude Code)."""
    ws = _workspace(base / "ws")
    _hook(ws)
    commit = "git commit -q --allow-empty -m x"
    script = [
        _turn(
            tw.ToolCall("t1", "read", {"path": "notes/n.txt"}),
            tw.ToolCall("t2", "bash", {"command": "grep -R SECRET docs"}),
        ),
        _turn(
            tw.ToolCall("t6", "read", {"path": "notes/n.txt"}),
            tw.ToolCall("t3", "bash", {"command": commit}),
        ),
        _turn(
            tw.ToolCall(
                "t4", "bash", {"command": "grep -R SECRET docs", "writes": True}
            ),
            tw.ToolCall("t5", "bash", {"command": commit, "writes": True}),
        ),
        tw.ModelResponse([tw.Text("done")]),
    ]
    results = await _agent(ws, backend, script, ("t1", "t2"))
    for refused in ("t2", "t3"):
        assert results[refused].is_error
        assert f"({backend})" in results[refused].text
        assert '"writes": true' in results[refused].text
    assert "SECRET" not in results["t2"].text
    assert not results["t4"].is_error and "SECRET" in results["t4"].text
    assert not results["t5"].is_error, results["t5"].text
    assert (ws / "hooked.txt").read_text() == "hooked\n"  # the barrier ran the hook
