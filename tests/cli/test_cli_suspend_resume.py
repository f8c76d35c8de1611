"""`toolweave run` suspends for a decision; a NEW process resumes it with `--approve/--deny`.

Real subprocesses of the real entry point, stdin not a terminal, a real
SQLite store, ``[permissions] on_ask = "suspend"`` in toolweave.toml. The
side effects are counted in a file the bash calls append to: nothing runs
twice, nothing approved is skipped, a denied call never ran. A second resume,
or a resume while another owner holds the session, is refused and runs nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_support import final, json_lines, script, tools

from toolweave.sessions import SessionLease, SQLiteSessionStore

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


def _setup(tmp_path: Path, workspace: Path) -> tuple[Path, Path]:
    (workspace / "toolweave.toml").write_text('[permissions]\non_ask = "suspend"\n')
    (workspace / "seed.txt").write_text("seed\n")
    batch = tools(
        ("r", "read", {"path": "seed.txt"}),
        ("a", "bash", {"command": "echo a >> log.txt"}),
        ("c", "bash", {"command": "echo c >> log.txt"}),
    )
    first = script(tmp_path / "first.json", batch, final("never reached"))
    return first, script(tmp_path / "later.json", final("finished"))


def _of(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == kind]


def _log(workspace: Path) -> list[str]:
    path = workspace / "log.txt"
    return path.read_text().split() if path.exists() else []


def test_suspend_then_new_processes_resume_with_decisions(
    tmp_path: Path, workspace: Path
) -> None:
    first, later = _setup(tmp_path, workspace)
    store = str(tmp_path / "s.db")
    run = _cli(
        workspace, "run", "task", "--scripted", str(first), "--json", "--store", store
    )
    assert run.returncode == 3, run.stderr  # suspended: not a failure, not a success
    lines = json_lines(run.stdout)
    (session,) = _of(lines, "Session")
    sid = session["session_id"]
    (suspended,) = _of(lines, "RunSuspended")
    assert [p["key"] for p in suspended["pending"]] == ["1.1"]
    assert suspended["pending"][0]["tool"] == "bash"
    assert suspended["pending"][0]["input"] == {"command": "echo a >> log.txt"}
    assert suspended["held"] == ["1.2"]
    assert _of(lines, "RunFinished")[0]["reason"] == "suspended"
    assert [r["call"]["id"] for r in _of(lines, "ToolResultReady")] == ["r"]
    assert _log(workspace) == []  # nothing that asks ran

    shown = _cli(workspace, "show", sid, "--store", store)
    assert shown.returncode == 0, shown.stderr
    assert "waiting for a decision (1)" in shown.stdout
    assert (
        "1.1  bash" in shown.stdout
        and "held behind them, not started: 1.2" in shown.stdout
    )
    assert "status: suspended" in shown.stdout

    # no decision given: refused, names what waits, nothing runs
    bare = _cli(workspace, "resume", sid, "--scripted", str(later), "--store", store)
    assert (
        bare.returncode == 2
        and "waits for a decision on: 1.1" in bare.stderr + bare.stdout
    )
    assert _log(workspace) == []

    resumed = _cli(
        workspace, "resume", sid, "--approve", "1.1",
        "--scripted", str(later), "--json", "--store", store,
    )  # fmt: skip
    assert resumed.returncode == 3, (
        resumed.stderr
    )  # c asks in its turn: suspended again
    assert _log(workspace) == ["a"]
    (again,) = _of(json_lines(resumed.stdout), "RunSuspended")
    assert [p["key"] for p in again["pending"]] == ["1.2"]

    done = _cli(
        workspace, "resume", sid, "--deny", "1.2",
        "--scripted", str(later), "--json", "--store", store,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json_lines(done.stdout)
    assert _of(out, "RunFinished")[0]["reason"] == "completed"
    assert _log(workspace) == ["a"]  # c denied: never ran; a ran once
    db = SQLiteSessionStore(Path(store), read_only=True)
    try:
        answers = db.messages(sid)[2].tool_results
    finally:
        db.close()
    assert [r.call_id for r in answers] == ["r", "a", "c"]
    assert "seed" in answers[0].text and not answers[1].is_error
    assert "denied by the user" in answers[2].text

    # resumed already: a stale decision is refused, nothing runs again
    stale = _cli(
        workspace, "resume", sid, "--approve", "1.1",
        "--scripted", str(later), "--store", store,
    )  # fmt: skip
    assert stale.returncode == 2
    assert "not waiting for a decision" in stale.stderr + stale.stdout
    assert _log(workspace) == ["a"]


def test_a_resume_while_another_owner_holds_the_session_is_refused(
    tmp_path: Path, workspace: Path
) -> None:
    first, later = _setup(tmp_path, workspace)
    store = str(tmp_path / "s.db")
    run = _cli(
        workspace, "run", "task", "--scripted", str(first), "--json", "--store", store
    )
    assert run.returncode == 3, run.stderr
    sid = _of(json_lines(run.stdout), "Session")[0]["session_id"]
    db = SQLiteSessionStore(Path(store))
    held = SessionLease.acquire(db, sid, owner="another-host.example:7")
    try:
        busy = _cli(
            workspace, "resume", sid, "--approve", "1.1",
            "--scripted", str(later), "--store", store,
        )  # fmt: skip
        assert busy.returncode == 2, busy.stderr
        assert "another-host.example:7" in busy.stderr + busy.stdout
        assert _log(workspace) == []
    finally:
        held.release()
        db.close()
    ok = _cli(
        workspace, "resume", sid, "--approve", "1.1", "--deny", "1.2",
        "--scripted", str(later), "--store", store,
    )  # fmt: skip
    # 1.2 is not waiting yet (held behind 1.1): a decision for it is refused
    assert (
        ok.returncode == 2 and "no call waits under key(s) 1.2" in ok.stderr + ok.stdout
    )
    assert _log(workspace) == []
