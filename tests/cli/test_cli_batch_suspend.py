"""`toolweave batch --on-ask suspend`: a session that suspends is reported as such.

Real subprocesses of the real entry point and a real SQLite store. The
session's record says ``suspended`` (not failed), the summary counts it, a
re-run with ``--retry-failed`` leaves it alone (nothing runs twice), and a
NEW process resumes it with ``toolweave resume ID --approve KEY``: the
approved call runs once, the call that ran before the suspension is not run
again. Side effects are counted in a file the bash calls append to.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_support import final, script, tools

from toolweave.sessions import SQLiteSessionStore

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


def _cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _log(workspace: Path, name: str) -> list[str]:
    path = workspace / name
    return path.read_text().split() if path.exists() else []


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_reports_a_suspended_session_and_a_new_process_resumes_it(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "seed.txt").write_text("seed\n")
    first = script(
        tmp_path / "first.json",
        {
            **tools(
                ("r", "bash", {"command": "cat seed.txt"}),
                ("a", "bash", {"command": "echo a >> log.txt"}),
            ),
            "stop_reason": "tool_use",
            "chunk_delay": 0.0,
        },
        final("never reached"),
    )
    later = script(tmp_path / "later.json", final("finished"))
    tasks = tmp_path / "tasks.jsonl"
    line = {
        "id": "t1",
        "prompt": "do it",
        "workspace": str(workspace),
        "model": "scripted:" + first.read_text(),
    }
    tasks.write_text(json.dumps(line) + "\n")
    # 'cat' is read-only (runs), 'echo a >> log.txt' asks: nobody answers in a batch
    store = str(tmp_path / "s.db")
    args = ("batch", str(tasks), "--tools", "coding", "--no-progress", "--store", store)
    done = _cli(workspace, *args, "--on-ask", "suspend")
    assert done.returncode == 0, done.stderr
    (record,) = _records(tmp_path / "tasks.results.jsonl")
    assert record["status"] == "suspended", record
    assert record["completion_reason"] == "suspended"
    assert "suspended 1" in done.stderr and "failed 0" in done.stderr
    sid = record["session_id"]
    assert _log(workspace, "log.txt") == []  # what asks did not run

    # a re-run, even with --retry-failed, leaves the suspended session alone
    again = _cli(workspace, *args, "--on-ask", "suspend", "--retry-failed")
    assert again.returncode == 0, again.stderr
    assert "skipped 1" in again.stderr
    assert len(_records(tmp_path / "tasks.results.jsonl")) == 1
    db = SQLiteSessionStore(Path(store), read_only=True)
    try:
        assert len(db.list_sessions()) == 1
    finally:
        db.close()

    shown = _cli(workspace, "show", sid, "--store", store)
    assert "waiting for a decision (1)" in shown.stdout, shown.stdout + shown.stderr

    resumed = _cli(
        workspace, "resume", sid, "--approve", "1.1",
        "--scripted", str(later), "--store", store,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert _log(workspace, "log.txt") == ["a"]  # approved: ran once
    db = SQLiteSessionStore(Path(store), read_only=True)
    try:
        calls = db.calls(sid)
        answers = db.messages(sid)[2].tool_results
    finally:
        db.close()
    ran = sorted(c.call.id for c in calls if c.running_at is not None)
    assert ran == ["a", "r"], calls  # each entered its tool once
    assert [r.call_id for r in answers] == ["r", "a"]
    assert "seed" in answers[0].text and not answers[1].is_error
