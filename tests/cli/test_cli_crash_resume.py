"""SIGKILL `toolweave run` mid-batch, then `toolweave resume`: no message lost, nothing re-run.

Real subprocesses all the way: the CLI, the bash tool's shell, SQLite on disk.
The shell announces itself through a FIFO (a rendezvous, no polling), so the
kill lands while the call is certainly running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

from cli_support import final, json_lines, script, tools

from toolweave.sessions import RESUME_PROMPT, CallState, RunState, SQLiteSessionStore

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


def _start_and_kill_mid_batch(
    tmp_path: Path, workspace: Path, db: Path
) -> tuple[str, list[str]]:
    os.mkfifo(workspace / "ready.fifo")
    first = script(
        tmp_path / "first.json",
        tools(
            ("c1", "bash", {"command": "echo first >> log.txt"}),
            (
                "c2",
                "bash",
                {"command": "echo ran >> marker.txt; echo $$ > ready.fifo; sleep 60"},
            ),
            ("c3", "read", {"path": "log.txt"}),
            text="Logging, then a long command.",
        ),
    )
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            "the task",
            "--scripted",
            str(first),
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
    seen: list[str] = []
    session_id = ""
    assert proc.stdout is not None
    shell_pid = 0
    try:
        for line in proc.stdout:
            event = json.loads(line)
            seen.append(event["type"])
            if event["type"] == "Session":
                session_id = event["session_id"]
            if event["type"] == "ToolRunning" and event["call_id"] == "c2":
                with (
                    workspace / "ready.fifo"
                ).open() as fifo:  # blocks until the shell runs
                    shell_pid = int(fifo.read().strip())
                break
        proc.kill()  # SIGKILL: no cleanup, no last words
        proc.wait(timeout=30)
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if shell_pid:
            with suppress(ProcessLookupError):
                os.killpg(
                    shell_pid, signal.SIGKILL
                )  # the orphaned `sleep 60` and its shell
    assert proc.returncode == -signal.SIGKILL
    return session_id, seen


def test_sigkill_mid_batch_then_resume(tmp_path: Path, workspace: Path) -> None:
    db = tmp_path / "sessions.db"
    session_id, seen = _start_and_kill_mid_batch(tmp_path, workspace, db)
    assert "ToolResultReady" in seen  # c1 finished before the kill

    store = SQLiteSessionStore(db)
    assert store.find_session(session_id).status == "crashed"
    before = store.messages(session_id)
    assert [m.role for m in before] == ["user", "assistant"]
    assert [c.id for c in before[1].tool_calls] == ["c1", "c2", "c3"]
    states = {c.call.id: c.state for c in store.calls(session_id)}
    assert states["c1"] is CallState.FINISHED and states["c2"] is CallState.RUNNING
    assert states["c3"] in (CallState.PENDING, CallState.WAITING)

    second = script(
        tmp_path / "second.json", final("Resumed; not repeating the long command.")
    )
    done = subprocess.run(
        [
            *CLI,
            "resume",
            session_id[:10],
            "--scripted",
            str(second),
            "--json",
            "--store",
            str(db),
        ],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "1 call(s) were running" in done.stderr
        and "1 call(s) had not started" in done.stderr
    )
    lines = json_lines(done.stdout)
    assert lines[-1]["type"] == "RunFinished" and lines[-1]["reason"] == "completed"

    # Nothing ran twice: c1 logged once, c2 started once, c3 never ran.
    assert (workspace / "log.txt").read_text() == "first\n"
    assert (workspace / "marker.txt").read_text() == "ran\n"
    assert "ToolUseStarted" not in [line["type"] for line in lines]

    after = store.messages(session_id)
    assert after[:2] == before  # no message lost
    results = after[2].tool_results
    assert [r.call_id for r in results] == ["c1", "c2", "c3"]
    assert not results[0].is_error
    assert results[1].synthetic and "Interrupted, outcome unknown" in results[1].text
    assert results[2].synthetic and results[2].text.startswith("Not run")
    assert after[3].text == RESUME_PROMPT
    assert after[4].text == "Resumed; not repeating the long command."
    assert len(after) == 5
    assert [m["role"] for m in lines[-1]["messages"]] == [m.role for m in after]
    states = {c.call.id: c.state for c in store.calls(session_id)}
    assert states == {
        "c1": CallState.FINISHED,
        "c2": CallState.LOST,
        "c3": CallState.SKIPPED,
    }
    assert [r.state for r in store.runs(session_id)] == [
        RunState.RUNNING,
        RunState.FINISHED,
    ]
    assert store.find_session(session_id).status == "completed"
    store.close()
