"""The bash tool's OS sandbox: read-only, workspace-write and off, under Landlock and bwrap.

Every test that needs a backend runs once per backend this machine has (both
on CI: Landlock in the kernel, bubblewrap from ``.ci/setup-extras``).
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
from pathlib import Path

import anyio
import pytest
from builtin_support import leftovers, run

from toolweave._exceptions import ConfigError, ToolError, ToolTimeoutError
from toolweave.tools import Concurrency, SandboxMode, SessionState
from toolweave.tools.builtin import BashTool, conservative_read_only
from toolweave.tools.builtin.bash import _tool as bash_module
from toolweave.tools.builtin.sandbox import _sandbox as sandbox_module
from toolweave.tools.builtin.sandbox._landlock import landlock_abi
from toolweave.tools.builtin.sandbox._sandbox import (
    Backend,
    _landlock_rules,
    backend_available,
)
from toolweave.tools.builtin.sandbox._spawn import spawn_landlocked

pytestmark = pytest.mark.anyio

BACKENDS: list[Backend] = ["landlock", "bwrap"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each backend this machine can run."""
    name: Backend = request.param
    if not backend_available(name):
        pytest.skip(f"{name} is not available here")
    return name


def _tree(top: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under `top` (mode and content or link target), links not followed."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            st = path.lstat()
            data: bytes | str = b""
            if path.is_symlink():
                data = os.readlink(path)
            elif path.is_file():
                data = path.read_bytes()
            found[str(path.relative_to(top))] = (st.st_mode, data)
    return found


def _exists(path: Path) -> bool:
    return path.exists()


async def _outcome(tool: BashTool, raw: dict[str, object], state: SessionState) -> str:
    """The text the model sees, whether the call succeeded or failed."""
    try:
        return str(await run(tool, raw, state))
    except ToolError as exc:
        return f"ERROR: {exc}"


WRITERS = [
    "echo x > new.txt",
    "echo x >> kept.txt",
    "touch new.txt",
    "mkdir newdir",
    "cp kept.txt copy.txt",
    "ln -s kept.txt link",
    "mkfifo fifo",
    "rm kept.txt",
    "mv kept.txt moved.txt",
    "truncate -s 0 kept.txt",
    "sed -i s/keep/gone/ kept.txt",
    "python3 -c \"open('new.txt', 'w').write('x')\"",
    "echo x > {outside}/new.txt",
    "rm {outside}/secret.txt",
    "echo x > $TMPDIR/new.txt",
]


@pytest.mark.parametrize("command", WRITERS)
async def test_read_only_refuses_every_write_and_says_why(
    root: Path, outside: Path, state: SessionState, backend: Backend, command: str
) -> None:
    (root / "kept.txt").write_text("keep me\n")
    before, before_out = _tree(root), _tree(outside)
    tool = BashTool(root, sandbox="read-only", sandbox_backend=backend)
    text = await _outcome(tool, {"command": command.format(outside=outside)}, state)
    assert _tree(root) == before
    assert _tree(outside) == before_out
    assert text.startswith("ERROR:"), text
    assert f"ran in the read-only sandbox ({backend})" in text
    assert "nothing was written" in text
    assert (
        "--sandbox" in text
    )  # the mode itself is read-only: only the user can widen it


async def test_read_only_still_reads_runs_programs_and_writes_devices(
    root: Path, state: SessionState, backend: Backend
) -> None:
    (root / "kept.txt").write_text("keep me\n")
    tool = BashTool(root, sandbox="read-only", sandbox_backend=backend)
    command = (
        "cat kept.txt; ls; echo gone > /dev/null; echo err >/dev/stderr;"
        " head -c 3 /dev/zero | wc -c; git --version | cut -d' ' -f1"
    )
    out = await run(tool, {"command": command}, state)
    assert out == "keep me\nkept.txt\nerr\n3\ngit\n"


async def test_workspace_write_allows_the_workspace_and_a_private_tmp(
    root: Path, state: SessionState, backend: Backend
) -> None:
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=backend)
    command = (
        "echo hi > new.txt && mkdir -p sub/dir && echo x > sub/dir/f"
        " && echo t > $TMPDIR/t && cat $TMPDIR/t && echo $TMPDIR"
    )
    out = await run(tool, {"command": command}, state)
    lines = out.splitlines()
    assert lines[0] == "t"
    assert (root / "new.txt").read_text() == "hi\n"
    assert (root / "sub/dir/f").read_text() == "x\n"
    tmp = Path(lines[1])
    assert tmp.name.startswith("toolweave-sandbox-") and not tmp.is_relative_to(root)
    assert not _exists(tmp)  # removed after the call


@pytest.mark.parametrize(
    "command",
    ["echo x > {outside}/new.txt", "rm {outside}/secret.txt", "touch /new-at-root"],
)
async def test_workspace_write_refuses_outside(
    root: Path, outside: Path, state: SessionState, backend: Backend, command: str
) -> None:
    before = _tree(outside)
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=backend)
    text = await _outcome(tool, {"command": command.format(outside=outside)}, state)
    assert _tree(outside) == before
    assert not _exists(Path("/new-at-root"))
    assert text.startswith("ERROR:"), text
    assert f"ran confined to the workspace ({backend})" in text


def _git_repo(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git/hooks/post-checkout.sample").write_text("#!/bin/sh\n")


GIT_TAMPERING = [
    "printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> .git/config",
    "git config core.pager 'touch pwned'",
    "echo 'touch pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "rm .git/config",
    "mv .git/config .git/config.bak && echo '[core]' > .git/config",
    "rm -rf .git/hooks",
    "echo x > .git/hooks/post-checkout.sample",
    "rm -rf .git/hooks && ln -s .. .git/hooks",
    "rm .git/config && mkdir .git/config && touch .git/config/x",
    "chmod 000 .git/hooks/post-checkout.sample",
    "mkdir .git/hooks/sub && echo x > .git/hooks/sub/pre-push",
]


@pytest.mark.parametrize("command", GIT_TAMPERING)
async def test_workspace_write_keeps_git_config_and_hooks(
    root: Path, state: SessionState, backend: Backend, command: str
) -> None:
    _git_repo(root)
    config = (root / ".git/config").read_bytes()
    hooks = _tree(root / ".git/hooks")
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=backend)
    text = await _outcome(tool, {"command": command}, state)
    assert (root / ".git/config").read_bytes() == config
    assert _tree(root / ".git/hooks") == hooks
    if backend == "bwrap":  # enforced: the write itself fails
        assert "Read-only file system" in text or "Device or resource busy" in text
    else:  # Landlock cannot carve holes: the guard puts the files back
        assert "they were restored" in text, text


async def test_workspace_write_can_commit(
    root: Path, state: SessionState, backend: Backend
) -> None:
    _git_repo(root)
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=backend)
    command = (
        "git add a.txt && git -c user.email=t@t -c user.name=t commit -qm one"
        " && git log --format=%s"
    )
    assert await run(tool, {"command": command}, state) == "one\n"


@pytest.mark.parametrize("network", [True, False])
async def test_network_can_be_cut(
    root: Path, state: SessionState, backend: Backend, network: bool
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:  # the kernel accepts
        port = server.getsockname()[1]
        tool = BashTool(
            root, sandbox="read-only", sandbox_backend=backend, network=network
        )
        text = await _outcome(
            tool,
            {"command": f"echo hi > /dev/tcp/127.0.0.1/{port} && echo sent"},
            state,
        )
    assert (text == "sent\n") is network, text


async def test_timeout_kills_a_confined_group(
    root: Path, state: SessionState, backend: Backend
) -> None:
    tool = BashTool(root, sandbox="read-only", sandbox_backend=backend)
    command = "sleep 301 & echo started $!; sleep 301"
    with pytest.raises(ToolTimeoutError, match="started"):
        await run(tool, {"command": command, "timeout": 0.5}, state)
    # the background child was killed with the group (found by command line:
    # under bwrap the pid the command printed is its namespace's own)
    assert not await leftovers("sleep 301")


_ESCAPE = (
    "setsid sh -c 'exec sleep 302' >/dev/null 2>&1 </dev/null & p=$!;"
    ' until [ "$(cut -d" " -f6 /proc/$p/stat 2>/dev/null)" = "$p" ]; do :; done;'
    " echo escaped"
)
"""Leaves the call's process group and session and closes its output, for sure
(it spins until the child leads its own session): neither the group kill nor
the reaper can find it."""


async def test_a_process_that_left_group_session_and_output_dies_with_the_call_in_bwrap(
    root: Path, state: SessionState, backend: Backend
) -> None:
    """bwrap: the call's pid namespace dies with it. Landlock: the known limit.

    The Landlock case is the control: the same harness sees the survivor
    there (docs/bash-safety.md says why, and that it stays confined).
    """
    namespaced = backend == "bwrap" and sandbox_module._bwrap_pid_namespace()
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=backend)
    assert await run(tool, {"command": _ESCAPE}, state) == "escaped\n"
    survivors = await leftovers("sleep 302", within=1 if not namespaced else 5)
    assert bool(survivors) is not namespaced


async def test_in_bwrap_a_command_sees_and_signals_no_process_outside_its_call(
    root: Path, state: SessionState
) -> None:
    if not backend_available("bwrap") or not sandbox_module._bwrap_pid_namespace():
        pytest.skip("bwrap with a pid namespace is not available here")
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend="bwrap")
    text = await _outcome(
        tool, {"command": f"ls /proc | grep -c '^[0-9]'; kill -0 {os.getpid()}"}, state
    )
    assert text.startswith("ERROR: ")  # kill's failure fails the call
    count, error = text.removeprefix("ERROR: ").split("\n", 1)
    assert int(count) <= 4  # the namespace's init, the shell, ls, grep
    assert "No such process" in error


def _say_read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The classifier is wrong: it calls every command read-only."""
    monkeypatch.setattr(bash_module, "classify_bash", lambda *_, **__: Concurrency.SAFE)


async def test_a_call_judged_read_only_runs_read_only_whatever_the_mode(
    root: Path, state: SessionState, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    _say_read_only(monkeypatch)
    tool = BashTool(root, sandbox="off", sandbox_backend=backend)
    raw: dict[str, object] = {"command": "echo pwned > forced.txt"}
    assert tool.concurrency_for(tool.parse(raw)) is Concurrency.SAFE
    text = await _outcome(tool, raw, state)
    assert not (root / "forced.txt").exists()
    assert "judged read-only, so it ran in the read-only sandbox" in text
    assert '"writes": true' in text and "sandbox mode (off)" in text
    # asking again with writes: true makes it exclusive, under the session's mode
    again = {**raw, "writes": True}
    assert tool.concurrency_for(tool.parse(again)) is Concurrency.SEQUENTIAL
    assert await run(tool, again, state) == "(no output)"
    assert (root / "forced.txt").read_text() == "pwned\n"


async def test_the_session_mode_wins_over_the_tool_default(
    root: Path, backend: Backend
) -> None:
    state = SessionState(workspace=root, sandbox=SandboxMode.READ_ONLY)
    tool = BashTool(root, sandbox="off", sandbox_backend=backend)
    text = await _outcome(tool, {"command": "touch f", "writes": True}, state)
    assert not (root / "f").exists()
    assert "because the sandbox mode is 'read-only'" in text


async def test_mode_off_does_not_confine(root: Path, outside: Path) -> None:
    state = SessionState(workspace=root)
    tool = BashTool(root, sandbox="off")
    await run(tool, {"command": f"touch {outside}/made", "writes": True}, state)
    assert (outside / "made").exists()


def test_invalid_mode_is_a_config_error(root: Path) -> None:
    with pytest.raises(ConfigError, match="read-only, workspace-write, off"):
        BashTool(root, sandbox="sometimes")


def _no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "backend_available", lambda _: False)


async def test_without_any_backend_read_only_shrinks_and_it_is_said_once(
    root: Path,
    state: SessionState,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _no_backend(monkeypatch)
    tool = BashTool(root)
    for command, verdict in [
        ("git log", Concurrency.SEQUENTIAL),  # read-only to the classifier only
        ("cat a b", Concurrency.SAFE),
        ("ls -la src", Concurrency.SAFE),
    ]:
        assert tool.concurrency_for(tool.parse({"command": command})) is verdict
    with caplog.at_level(logging.WARNING, logger="toolweave.sandbox"):
        first = await run(tool, {"command": "echo one"}, state)
        second = await run(tool, {"command": "echo two"}, state)
    assert "no OS sandbox is available" in first
    assert second == "two\n"
    assert [r.message for r in caplog.records].count(
        "toolweave: no OS sandbox is available (neither Landlock nor bubblewrap):"
        " bash commands run unconfined, and only a small core of plain commands"
        " counts as read-only"
    ) == 1


async def test_a_forced_backend_that_is_missing_means_unconfined(
    root: Path, state: SessionState, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_backend(monkeypatch)
    tool = BashTool(root, sandbox_backend="landlock")
    assert tool.sandbox.backend_for(SandboxMode.READ_ONLY) is None
    assert "no OS sandbox" in await run(tool, {"command": "true"}, state)


@pytest.mark.parametrize(
    ("command", "core"),
    [
        ("ls", True),
        ("ls -la src/", True),
        ("cat a.txt b.txt", True),
        ("grep -rn foo src", True),
        ("wc -l a", True),
        ("git log", False),  # not in the core: configured programs
        ("rg --pre=sh foo", False),
        ("find . -delete", False),
        ("sort -o out in", False),
        ("cat a > b", False),
        ("cat a | tee b", False),
        ("cat a; rm b", False),
        ("cat $(rm x)", False),
        ("cat `rm x`", False),
        ("cat 'a b'", False),
        ('cat "$HOME"', False),
        ("cat *", False),
        ("cat a\nrm b", False),
        ("PATH=. ls", False),  # an assignment picks another program
        ("", False),
        ("   ", False),
    ],
)
def test_conservative_core(command: str, core: bool) -> None:
    assert conservative_read_only(command) is core


@pytest.fixture
def landlock() -> None:
    if not backend_available("landlock"):
        pytest.skip("Landlock is not available here")


@pytest.mark.usefixtures("landlock")
async def test_a_confined_spawn_that_cannot_start_raises(root: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await spawn_landlocked(
            ["bash", "-c", "true"],
            cwd=root / "missing",
            env={},
            rules=_landlock_rules(root, None),
            block_tcp=False,
        )


@pytest.mark.usefixtures("landlock")
async def test_closing_a_confined_process_kills_and_reaps_it(root: Path) -> None:
    process = await spawn_landlocked(
        ["sleep", "300"],
        cwd=root,
        env={},
        rules=_landlock_rules(root, None),
        block_tcp=False,
    )
    assert process.returncode is None
    await process.aclose()
    assert process.returncode == -9
    await process.aclose()  # idempotent


def _start_outsider() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "300"])


@pytest.mark.usefixtures("landlock")
async def test_a_confined_command_cannot_signal_processes_outside(
    root: Path, state: SessionState
) -> None:
    if landlock_abi() < 6:
        pytest.skip("signal scoping needs Landlock ABI 6")
    outsider = _start_outsider()
    try:
        tool = BashTool(root, sandbox="read-only", sandbox_backend="landlock")
        text = await _outcome(tool, {"command": f"kill -9 {outsider.pid}"}, state)
        assert "Operation not permitted" in text
        assert outsider.poll() is None
        inside = await run(
            tool, {"command": "sleep 30 & kill $!; wait $!; echo $?"}, state
        )
        assert inside == "143\n"  # its own children it may still signal
    finally:
        outsider.kill()
        outsider.wait()


async def test_a_cancelled_workspace_write_call_still_removes_its_tmp(
    root: Path, state: SessionState, backend: Backend
) -> None:
    fifo = root / "tmp.fifo"
    os.mkfifo(fifo)
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend=backend)
    command = "echo $TMPDIR > tmp.fifo; sleep 300"
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, tool, {"command": command}, state)
        # rendezvous: the read returns once the command is running
        tmp = Path((await anyio.to_thread.run_sync(fifo.read_text)).strip())
        assert _exists(tmp)
        tg.cancel_scope.cancel()
    assert not _exists(tmp)


@pytest.mark.usefixtures("landlock")
async def test_a_cancelled_call_still_has_its_git_changes_undone(
    root: Path, state: SessionState
) -> None:
    _git_repo(root)
    config = (root / ".git/config").read_bytes()
    fifo = root / "go.fifo"
    os.mkfifo(fifo)
    tool = BashTool(root, sandbox="workspace-write", sandbox_backend="landlock")
    command = "echo '[core] pager = evil' >> .git/config; echo in > go.fifo; sleep 300"
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, tool, {"command": command}, state)
        await anyio.to_thread.run_sync(fifo.read_text)  # rendezvous: it wrote
        assert (root / ".git/config").read_bytes() != config
        tg.cancel_scope.cancel()
    assert (root / ".git/config").read_bytes() == config


@pytest.mark.parametrize("kernel_allows", [True, False])
def test_a_pid_namespace_where_the_kernel_allows_one_else_bwrap_without_it(
    root: Path, monkeypatch: pytest.MonkeyPatch, kernel_allows: bool
) -> None:
    """Workspace-write calls get a pid namespace if the probe says the kernel allows one.

    Refused, bwrap still confines the files; read-only calls never get one.
    """
    if not backend_available("bwrap"):
        pytest.skip("bwrap is not available here")
    real_runs = sandbox_module._runs

    def runs(bwrap: list[str]) -> bool:
        if "--unshare-pid" in bwrap and not kernel_allows:
            return False  # as where user namespaces may not own a pid namespace
        return real_runs(bwrap)

    monkeypatch.setattr(sandbox_module, "_runs", runs)
    sandbox_module._bwrap_pid_namespace.cache_clear()
    tmp = root / "tmp"
    try:
        write = sandbox_module._bwrap_argv(root, tmp, root, network=True)
        read_only = sandbox_module._bwrap_argv(root, None, root, network=True)
    finally:
        sandbox_module._bwrap_pid_namespace.cache_clear()
    assert backend_available("bwrap")
    assert ("--unshare-pid" in write) is kernel_allows
    if kernel_allows:
        assert write[write.index("--proc") + 1] == "/proc"
    else:
        assert "--proc" not in write
    assert "--unshare-pid" not in read_only  # read-only: within the spawn budget
    for argv in (write, read_only):
        assert argv[1:3] == ["--ro-bind", "/"]  # the files are confined either way
