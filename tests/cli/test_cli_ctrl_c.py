"""Ctrl-C on a real `toolweave run`: the first interrupts (resumable), the second quits.

Rendezvous through FIFOs and the JSON event stream; no sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from cli_support import final, script, tools

from toolweave.sessions import CallState, RunState, SQLiteSessionStore, prepare_resume

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


def _events(proc: subprocess.Popen[str]) -> Iterator[dict[str, object]]:
    assert proc.stdout is not None
    for line in proc.stdout:
        yield json.loads(line)


def _start(
    tmp_path: Path, workspace: Path, steps: Path, db: Path
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *CLI,
            "run",
            "task",
            "--scripted",
            str(steps),
            "--json",
            "--store",
            str(db),
            "--permission-mode",
            "bypass",
        ],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _alive(pid: int) -> bool:
    """True if `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_fifo(path: Path) -> int:
    with path.open() as fifo:  # blocks until the command has started
        return int(fifo.read().strip())


def test_ctrl_c_interrupts_the_batch_and_leaves_a_resumable_session(
    tmp_path: Path, workspace: Path
) -> None:
    os.mkfifo(workspace / "ready.fifo")
    steps = script(
        tmp_path / "s.json",
        tools(
            (
                "long",
                "bash",
                {"command": "echo $$ > ready.fifo; sleep 60; echo late > late.txt"},
            ),
            ("next", "read", {"path": "late.txt"}),
        ),
        final("never reached"),
    )
    db = tmp_path / "s.db"
    proc = _start(tmp_path, workspace, steps, db)
    session = ""
    finished: dict[str, object] = {}
    try:
        for event in _events(proc):
            if event["type"] == "Session":
                session = str(event["session_id"])
            if event["type"] == "ToolRunning" and event["call_id"] == "long":
                _wait_fifo(workspace / "ready.fifo")
                proc.send_signal(signal.SIGINT)
            if event["type"] == "RunFinished":
                finished = event
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert finished["reason"] == "interrupted"
    assert not (workspace / "late.txt").exists()  # the CANCEL tool was stopped
    store = SQLiteSessionStore(db)
    info = store.find_session(session)
    assert info.status == "interrupted"
    results = store.messages(session)[2].tool_results
    assert [r.call_id for r in results] == ["long", "next"]
    assert all(r.synthetic for r in results)
    assert results[0].text.startswith("Cancelled") and results[1].text.startswith(
        "Not run"
    )
    plan = prepare_resume(store, session)  # resumable: nothing to repair, carry on
    assert plan.lost == () and plan.skipped == () and len(plan.history) == 3
    store.close()


def test_a_second_ctrl_c_quits_at_once(tmp_path: Path, workspace: Path) -> None:
    os.mkfifo(workspace / "hook.fifo")
    (workspace / "toolweave.toml").write_text(
        '[[hooks.PreToolUse]]\nmatcher = "write"\ncommand = "echo $$ > hook.fifo; sleep 60"\n'
    )
    # `write` is a BLOCK tool: an interrupt lets it finish, so the run goes on.
    steps = script(
        tmp_path / "s.json",
        tools(("w", "write", {"path": "out.txt", "content": "x"})),
        final("never reached"),
    )
    db = tmp_path / "s.db"
    proc = _start(tmp_path, workspace, steps, db)
    session, notes, hook_pid = "", 0, 0
    try:
        for event in _events(proc):
            if event["type"] == "Session":
                session = str(event["session_id"])
            if event["type"] == "ToolUseStarted":
                hook_pid = _wait_fifo(workspace / "hook.fifo")
                proc.send_signal(signal.SIGINT)
            if event["type"] == "Note":
                notes += 1
                assert "Ctrl-C again" in str(event["message"])
                proc.send_signal(signal.SIGINT)
            assert event["type"] != "RunFinished"
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert notes == 1
    alive = _alive(hook_pid)
    if alive:
        os.killpg(hook_pid, signal.SIGKILL)
    assert not alive  # the hook's process group was killed on the way out
    assert not (workspace / "out.txt").exists()
    store = SQLiteSessionStore(db)
    assert store.find_session(session).status == "abandoned"
    assert store.runs(session)[0].state is RunState.ABANDONED
    plan = prepare_resume(store, session)
    assert [r.call.id for r in plan.skipped] == [
        "w"
    ]  # it never ran; never will by itself
    assert {c.call.id: c.state for c in store.calls(session)} == {
        "w": CallState.SKIPPED
    }
    store.close()
