"""The model writes every command: commands built to hang, flood, escape or crash the tool.

Each row states the behaviour the tool promises: the call returns (at the
shell's exit or its timeout, never later), nothing it started outlives it,
memory stays bounded and a cut is said, bad input is a clear error. Every
process a row leaves behind runs ``sleep 1000`` (or has it in its command
line); the test then waits for every such process to be gone (a pidfd, no
polling) and kills what is left if the tool failed to. They are found by
command line, since under bwrap a call has its own pid namespace and the
``PID <n>`` a row prints is that namespace's number. Every test has a hard timeout, so a regression
fails instead of hanging. Every adversarial command is bounded (no real
fork bomb, no multi-GB memory): the machine is shared.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from builtin_support import leftovers, run

import toolweave as tw
from temp_trees import remove_tree
from toolweave._exceptions import ToolError, ToolInputError, ToolTimeoutError
from toolweave.execution import PermissionMode
from toolweave.messages import ToolCall
from toolweave.models import ScriptedModel
from toolweave.tools import Concurrency, SandboxMode, SessionState, ToolContext
from toolweave.tools.builtin import BashTool, coding_tools
from toolweave.tools.builtin.bash._reap import kill_leftovers
from toolweave.tools.builtin.bash._tool import MAX_COMMAND_BYTES
from toolweave.tools.builtin.sandbox import _landlock, _sandbox
from toolweave.tools.builtin.sandbox import _popen as _bash_popen
from toolweave.tools.builtin.sandbox._landlock import SCOPES_ABI, landlock_abi
from toolweave.tools.builtin.sandbox._popen import _FdReceiveStream
from toolweave.tools.builtin.sandbox._sandbox import Backend, backend_available

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

KEEP = 10_000
"""`max_output_bytes` of the tool under test: small, so flood rows stay cheap."""

LEFT = "sleep 1000"
"""In the command line of every process a row leaves behind."""

_WAIT_SID = 'until [ "$(cut -d" " -f6 /proc/$p/stat 2>/dev/null)" = "$p" ]; do :; done'
"""Spin until process $p leads its own session: the row then really escaped."""


@dataclass(frozen=True)
class Row:
    command: str
    outcome: type[Exception] | None
    """None: a normal result; else the error the call raises."""
    expect: str = ""
    """A regular expression the result text must match (search)."""
    timeout: float | None = None


ROWS: dict[str, Row] = {
    # background children: the call returns when the shell exits, all are killed
    "background child": Row("sleep 1000 & echo PID $!", None, r"PID \d+"),
    "disowned child": Row("sleep 1000 & echo PID $!; disown", None, r"PID \d+"),
    "nohup child": Row("nohup sleep 1000 & echo PID $!", None, r"PID \d+"),
    "subshell child": Row("(sleep 1000 >/dev/null & echo PID $!)", None, r"PID \d+"),
    "own group (set -m)": Row("set -m; sleep 1000 & echo PID $!", None, r"PID \d+"),
    "own session (setsid), pipe kept": Row(
        f"setsid sleep 1000 & p=$!; {_WAIT_SID}; echo PID $p", None, r"PID \d+"
    ),
    "200 background sleeps": Row(
        "for i in $(seq 200); do sleep 1000 & echo PID $!; done", None, r"PID \d+"
    ),
    # timeouts: whatever the command does with signals, it ends at its timeout
    "child ignoring SIGTERM": Row(
        "(trap '' TERM; sleep 1000) & echo PID $!; wait",
        ToolTimeoutError,
        r"timed out after 1s",
        timeout=1,
    ),
    "setsid child ignoring SIGTERM, at timeout": Row(
        f"setsid bash -c \"trap '' TERM; sleep 1000\" & p=$!; {_WAIT_SID}; "
        "echo PID $p; wait",
        ToolTimeoutError,
        r"PID \d+",
        timeout=1,
    ),
    "exec replaces the shell": Row(
        "exec sleep 1000", ToolTimeoutError, r"timed out", timeout=1
    ),
    "shell stops itself": Row(
        "echo a; kill -STOP $$", ToolTimeoutError, r"timed out.*\na", timeout=1
    ),
    "stopped setsid child holding the pipe": Row(
        f'setsid bash -c "kill -STOP \\$\\$; sleep 1000" & p=$!; {_WAIT_SID};'
        " echo PID $p",
        None,
        r"PID \d+",
    ),
    "stdout and stderr closed": Row(
        "exec 1>&- 2>&-; sleep 1000", ToolTimeoutError, r"timed out", timeout=1
    ),
    # floods: bounded memory, the cut is said on the first line
    "yes": Row("yes", ToolTimeoutError, r"\[output cut: the command printed", 1),
    "cat /dev/zero": Row(
        "cat /dev/zero", ToolTimeoutError, r"\[output cut: .*\n\x00\x00", 1
    ),
    "head -c 2G /dev/urandom": Row(
        "head -c 2G /dev/urandom", ToolTimeoutError, r"\[output cut: ", 1
    ),
    "NUL and invalid UTF-8 in output": Row(
        r"printf 'a\0b\377c\n'", None, "^a\x00b\ufffdc\n$"
    ),
    # the shell's own fate
    # bwrap reports its child's death by signal 9 as exit status 137
    "kill -9 $$": Row(
        "kill -9 $$", ToolError, r"^\[(killed by signal 9|exit code 137)\]$"
    ),
    "stdin is empty": Row('cat; read x; echo "[$x] $?"', None, r"^\[\] 1\n$"),
    "no terminal": Row("echo hi > /dev/tty", ToolError, r"/dev/tty: .*exit code 1"),
    "unterminated quote": Row('echo "abc', ToolError, r"unexpected EOF.*exit code 2"),
    "heredoc": Row("cat <<EOF\nhello $((1+1))\nEOF", None, r"^hello 2\n$"),
    "1,000-deep brace groups": Row(
        "{ " * 1000 + "echo deep; " + "}; " * 1000, None, r"^deep\n$"
    ),
}

MODES = {
    "off": ("off", None),
    "workspace-write/bwrap": ("workspace-write", "bwrap"),
    "read-only/landlock": ("read-only", "landlock"),
}


@pytest.fixture(params=list(MODES))
def tool(request: pytest.FixtureRequest, root: Path) -> BashTool:
    """The bash tool under one sandbox mode and backend (skipped if unavailable)."""
    mode, backend = MODES[request.param]
    forced: Backend | None = backend  # type: ignore[assignment]
    if forced is not None and not backend_available(forced):
        pytest.skip(f"{forced} is not available here")
    return BashTool(root, max_output_bytes=KEEP, sandbox=mode, sandbox_backend=forced)


@pytest.mark.parametrize("name", ROWS)
async def test_adversarial_command(
    name: str, tool: BashTool, state: SessionState
) -> None:
    row = ROWS[name]
    raw: dict[str, object] = {"command": row.command, "writes": True}
    if row.timeout is not None:
        raw["timeout"] = row.timeout
    text: str
    if row.outcome is None:
        text = await run(tool, raw, state)
    else:
        with pytest.raises(row.outcome) as raised:
            await run(tool, raw, state)
        text = str(raised.value)
    assert not await leftovers(LEFT), f"{name}: processes outlived the call"
    assert re.search(row.expect, text, re.DOTALL), text[:500]
    assert len(text) < KEEP + 2_000  # bounded whatever the command printed
    if "output cut" in row.expect:
        assert text.split("\n", 2)[1].startswith("[output cut: ")


DEPTH = 10_000

FAIL_CLOSED = {
    "unclosed (((( x10000": "((((" * DEPTH,
    "unclosed $( x5000": "$(" * (DEPTH // 2),
    "closed $( x5000": "echo " + "$(" * 5_000 + "ls" + ")" * 5_000,
    "deep arithmetic": "((" + "(" * DEPTH + "1" + ")" * DEPTH + "))",
    "unterminated double quote": 'echo "abc',
    "unterminated single quote": "echo 'abc",
    "heredoc running a substitution": "cat <<EOF\n$(rm -rf x)\nEOF",
    "unterminated heredoc": "cat <<EOF\n$(rm -rf x)",
    "BASH_ENV": "BASH_ENV=./x bash -c ls",
    "ENV": "ENV=./x sh -c ls",
    "PROMPT_COMMAND": "PROMPT_COMMAND='rm x' ls",
    "LD_PRELOAD": "LD_PRELOAD=./x.so cat f",
    "export LD_PRELOAD": "export LD_PRELOAD=./x.so; cat f",
    "exec": "exec cat f",
    "setsid": "setsid cat f",
    "set -m": "set -m; cat f & wait",
    "kill": "kill -9 $$",
    "/dev/tty": "cat f > /dev/tty",
    "read": "read x",
    "1 MB command": "cat " + "f " * 500_000,
}
"""Inputs the classifier cannot prove read-only: each must be SEQUENTIAL and
an *ask*, never an automatic allow, and the check must end (the test timeout)."""


@pytest.mark.parametrize("name", FAIL_CLOSED)
async def test_the_classifier_fails_closed(
    name: str, root: Path, state: SessionState
) -> None:
    tool = BashTool(root)
    raw = {"command": FAIL_CLOSED[name]}
    args = tool.parse(raw)
    await tool.warm_declarations(raw)
    assert tool.concurrency_for(args) is Concurrency.SEQUENTIAL
    ctx = ToolContext(ToolCall("c", "bash", raw), state=state)
    assert (await tool.check_permissions(args, ctx)).behavior == "ask"


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ({"command": "ls", "timeout": float("nan")}, "finite number"),
        ({"command": "ls", "timeout": float("inf")}, "finite number"),
        ({"command": "ls", "timeout": -1}, "greater than 0"),
        ({"command": "ls", "timeout": 0}, "greater than 0"),
        ({"command": "ls", "timeout": 1e9}, "less than or equal to 600"),
        ({"command": "ls", "timeout": True}, "not true/false"),
        ({"command": "ls", "timeout": "soon"}, "valid number"),
        ({"command": "ls \udcff"}, "valid string"),
        ({"command": ""}, "at least 1 character"),
    ],
)
def test_bad_arguments_are_input_errors(
    raw: dict[str, object], error: str, root: Path
) -> None:
    with pytest.raises(ToolInputError, match=error):
        BashTool(root).parse(raw)


@pytest.mark.parametrize("size", [MAX_COMMAND_BYTES + 1, 1_000_000])
async def test_a_command_too_long_for_exec_is_a_clear_input_error(
    size: int, tool: BashTool, state: SessionState
) -> None:
    command = "echo " + "a" * (size - 5)
    with pytest.raises(ToolInputError, match="Write the script to a file"):
        await run(tool, {"command": command, "writes": True}, state)


async def test_the_longest_command_runs(tool: BashTool, state: SessionState) -> None:
    command = ": " + "a" * (MAX_COMMAND_BYTES - 11) + "; echo ok"
    assert len(command.encode()) == MAX_COMMAND_BYTES
    assert await run(tool, {"command": command, "writes": True}, state) == "ok\n"


async def test_a_pipe_read_is_a_checkpoint_even_with_data_waiting() -> None:
    """A flood must not hold the event loop: a cancelled read raises, data or not."""
    read_end, write_end = os.pipe()
    stream = _FdReceiveStream(os.fdopen(read_end, "rb"))
    try:
        os.write(write_end, b"data")
        with anyio.CancelScope() as scope:
            scope.cancel()
            await stream.receive()
        assert scope.cancelled_caught
        assert await stream.receive() == b"data"  # nothing was lost
    finally:
        os.close(write_end)
        await stream.aclose()


def test_kill_leftovers_leaves_unrelated_processes_alone(tmp_path: Path) -> None:
    """A process in another session, not holding the pipe, is never signalled."""
    bystander = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    target = subprocess.Popen(
        ["bash", "-c", "sleep 1000 & wait"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
    )
    try:
        killed = kill_leftovers(target.pid, None)
        assert target.pid in killed
        assert bystander.pid not in killed
        assert target.wait(10) == -signal.SIGKILL
        assert bystander.poll() is None
    finally:
        for p in (bystander, target):
            p.kill()
            p.wait()


async def test_through_the_agent_each_case_is_a_result_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    """One turn per case, through `tw.Agent`: every call ends, the run completes."""
    cases = [
        ({"command": "yes", "timeout": 1}, True, r"\[output cut: "),
        ({"command": "setsid sleep 1000 & echo PID $!; wait", "timeout": 1}, True, ""),
        ({"command": "kill -9 $$"}, True, r"killed by signal 9|exit code 137"),
        ({"command": "echo " + "a" * 200_000}, True, "Write the script to a file"),
        ({"command": "ls", "timeout": float("nan")}, True, "finite number"),
        ({"command": "printf 'ok\\0'"}, False, "^ok\x00$"),
    ]
    calls = [tw.ToolCall(f"c{i}", "bash", raw) for i, (raw, _, _) in enumerate(cases)]
    turns = [tw.ModelResponse([c], stop_reason=tw.StopReason.TOOL_USE) for c in calls]
    model = ScriptedModel([*turns, tw.ModelResponse([tw.Text("done")])])
    config = tw.AgentConfig(
        workspace=tmp_path,
        permission_mode=PermissionMode.BYPASS,
        max_iterations=len(calls) + 1,
        stall_limit=len(calls) + 1,
        repeat_failure_limit=None,
    )
    agent = tw.Agent(model, coding_tools(tmp_path), config=config)
    result = await agent.run("go")
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    results = [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]
    assert [r.call_id for r in results] == [c.id for c in calls]
    for (raw, is_error, expect), r in zip(cases, results, strict=True):
        assert r.is_error is is_error, (raw, r.text[:300])
        assert re.search(expect, r.text), (raw, r.text[:300])
        assert not await leftovers(LEFT)


async def test_a_cancelled_call_kills_a_setsid_child_holding_the_pipe(
    root: Path, state: SessionState
) -> None:
    """Cancel while a child that left the session still holds the output pipe."""
    fifo = root / "pid.fifo"
    os.mkfifo(fifo)
    command = f"setsid sleep 1000 & p=$!; {_WAIT_SID}; echo $p > pid.fifo; wait"
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, BashTool(root, sandbox="off"), {"command": command}, state)
        # rendezvous: the child has left the session once the pid arrives
        assert int(await anyio.to_thread.run_sync(fifo.read_text)) > 0
        tg.cancel_scope.cancel()
    assert not await leftovers(LEFT)


@pytest.mark.parametrize("probe", ["kill -0", "kill -CONT"])
async def test_a_sandboxed_command_cannot_signal_the_agent(
    probe: str, tool: BashTool, state: SessionState
) -> None:
    """``kill -9 -1`` would otherwise reach the agent; probe with harmless signals.

    Unconfined (mode off) the probe reaches the agent: proof it is a real one.
    """
    raw = {"command": f"{probe} {os.getpid()} && echo REACHED", "writes": True}
    if tool.sandbox_mode.value == "off":
        assert await run(tool, raw, state) == "REACHED\n"
        return
    if landlock_abi() < SCOPES_ABI and not _pid_namespaced(tool):
        pytest.skip("Landlock scopes need ABI 6")
    # Landlock scopes refuse the signal; in bwrap's pid namespace the agent
    # does not even exist
    with pytest.raises(ToolError, match=r"Operation not permitted|No such process"):
        await run(tool, raw, state)


def _pid_namespaced(tool: BashTool) -> bool:
    backend = tool.sandbox.backend_for(tool.sandbox_mode)
    return (
        backend == "bwrap"
        and tool.sandbox_mode is SandboxMode.WORKSPACE_WRITE
        and _sandbox._bwrap_pid_namespace()
    )


def test_scopes_without_abi_6_fail_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scopes-only ruleset on an older kernel is an error, never a no-op."""
    monkeypatch.setattr(_landlock, "landlock_abi", lambda: SCOPES_ABI - 1)
    with pytest.raises(OSError, match="ABI 6"):
        _landlock.Ruleset([], files=False)


GIT_ATTACKS = {
    "1,500-deep tree in hooks": "mkdir -p .git/hooks/$(printf 'a/%.0s' $(seq 1500))",
    "50 MB hook": "head -c 50M /dev/zero > .git/hooks/big",
    "hooks made private, then a new hook": (
        "chmod 700 .git/hooks; printf '#!/bin/sh\\necho evil\\n' > .git/hooks/pre-commit"
    ),
}


@pytest.fixture
def repo(root: Path) -> Iterator[Path]:
    """The workspace as a fresh git repository; what an attack left is removed after.

    The git guard sets a deep tree aside in the workspace (``.git-discarded-*``)
    rather than deleting it; a 1,500-level one must not outlive the test (see
    `temp_trees`).
    """
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    yield root
    for child in root.iterdir():
        if child.name.startswith((".git-discarded-", ".git.replaced-")):
            remove_tree(child)
    remove_tree(root / ".git" / "hooks" / "a")


@pytest.mark.parametrize("backend", ["landlock", "bwrap"])
@pytest.mark.parametrize("name", GIT_ATTACKS)
async def test_git_guard_undoes_what_no_walk_could_read(
    name: str,
    backend: Backend,
    repo: Path,
    state: SessionState,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deep or huge trees under .git: the guard neither crashes nor loads them.

    It used to walk recursively (RecursionError out of the call, hooks left in
    place) and read every new file whole into memory (a 2 GB hook, 2 GB).
    """
    if not backend_available(backend):
        pytest.skip(f"{backend} is not available here")
    hooks = repo / ".git/hooks"
    before = sorted(p.name for p in hooks.iterdir())
    read: list[str] = []
    real_read = Path.read_bytes

    def recording_read(self: Path) -> bytes:
        read.append(self.name)
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", recording_read)
    tool = BashTool(repo, sandbox="workspace-write", sandbox_backend=backend)
    raw = {"command": GIT_ATTACKS[name] + "; echo done", "writes": True}
    try:
        out = await run(tool, raw, state)
    except ToolError as exc:  # refused by a read-only bind (bwrap): fine too
        out = str(exc)
    assert out.startswith("done") or "Read-only file system" in out, out
    assert sorted(p.name for p in hooks.iterdir()) == before
    assert "big" not in read


async def test_a_spawn_that_cannot_be_watched_is_an_error_and_leaves_nothing(
    root: Path, state: SessionState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of descriptors after the fork: the child is killed and reaped, not leaked."""
    started: list[subprocess.Popen[bytes]] = []
    real_popen = _bash_popen.popen

    def recording_popen(*args: Any) -> subprocess.Popen[bytes]:
        started.append(real_popen(*args))
        return started[-1]

    def no_pidfd(pid: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(_bash_popen, "popen", recording_popen)
    monkeypatch.setattr(_bash_popen.os, "pidfd_open", no_pidfd)
    tool = BashTool(root, sandbox="off")
    with pytest.raises(ToolError, match=r"could not be started: .*Too many open files"):
        await run(tool, {"command": "sleep 1000", "writes": True}, state)
    assert len(started) == 1
    assert started[0].returncode == -signal.SIGKILL


async def test_environment_set_by_one_call_does_not_reach_the_next(
    tool: BashTool, state: SessionState
) -> None:
    """Each call is a fresh ``bash -c``: exports, traps and hooks die with it."""
    names = ("BASH_ENV", "ENV", "PROMPT_COMMAND", "LD_PRELOAD")
    if any(n in tool.env for n in names):
        pytest.skip("the test environment sets one of these itself")
    first = (
        "export BASH_ENV=/dev/null ENV=/dev/null PROMPT_COMMAND=x LD_PRELOAD=; echo set"
    )
    assert await run(tool, {"command": first, "writes": True}, state) == "set\n"
    second = "echo " + "".join(f"[${{{n}-unset}}]" for n in names)
    out = await run(tool, {"command": second, "writes": True}, state)
    assert out == "[unset]" * len(names) + "\n"
