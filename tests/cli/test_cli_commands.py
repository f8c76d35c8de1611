"""The commands end to end, in process: run, sessions, show, resume, timeline, errors."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import trio.testing
from cli_support import final, json_lines, script, tools
from rich.console import Console
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.cli.demo import run_schedules_demo
from toolweave.sessions import CallState, SQLiteSessionStore


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.output


def _survey(tmp_path: Path) -> Path:
    return script(
        tmp_path / "survey.json",
        tools(
            ("r1", "read", {"path": "a.txt"}),
            ("r2", "read", {"path": "b.txt"}),
            ("w1", "write", {"path": "c.txt", "content": "new\n"}),
            text="Reading both, then writing.",
        ),
        final("Done: c.txt written."),
    )


def test_run_json_streams_events_and_stores_the_session(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    db = tmp_path / "sessions.db"
    code, stdout, output = _invoke(
        "run",
        "survey",
        "--scripted",
        str(_survey(tmp_path)),
        "--json",
        "--store",
        str(db),
        "--permission-mode",
        "accept_edits",
    )
    assert code == 0, output
    lines = json_lines(stdout)
    assert lines[0]["type"] == "Session" and lines[0]["store"] == str(db)
    kinds = [line["type"] for line in lines[1:]]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert kinds.count("ToolResultReady") == 3 and "TextDelta" in kinds
    assert (
        lines[-1]["reason"] == "completed"
        and lines[-1]["output"] == "Done: c.txt written."
    )
    assert (workspace / "c.txt").read_text() == "new\n"
    store = SQLiteSessionStore(db)
    sid = lines[0]["session_id"]
    session = store.find_session(sid)
    assert session.status == "completed" and session.workspace == str(workspace)
    assert session.title == "survey" and session.model == "scripted:survey.json"
    assert [c.state for c in store.calls(sid)] == [CallState.FINISHED] * 3
    assert [m["role"] for m in lines[-1]["messages"]] == [
        m.role for m in store.messages(sid)
    ]
    store.close()


def test_sessions_show_and_timeline_read_the_store(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    db = str(tmp_path / "sessions.db")
    code, stdout, output = _invoke(
        "run",
        "survey",
        "--scripted",
        str(_survey(tmp_path)),
        "--store",
        db,
        "--permission-mode",
        "accept_edits",
    )
    assert code == 0, output
    assert "iteration 1" in stdout and "read a.txt" in stdout and "✓ done" in stdout
    assert "completed" in stdout and "toolweave show" in stdout
    store = SQLiteSessionStore(db)
    (session,) = store.list_sessions()
    store.close()
    sid = session.id[:10]
    code, listing, output = _invoke("sessions", "--store", db)
    assert code == 0 and session.id[:12] in listing and "completed" in listing, output
    code, transcript, output = _invoke("show", sid, "--store", db)
    assert code == 0, output
    for expected in (
        "survey",
        "Reading both",
        "⚙ read a.txt",
        "alpha",
        "⚙ write c.txt",
        "Done: c.txt written.",
    ):
        assert expected in transcript, expected
    page = tmp_path / "t.html"
    code, said, output = _invoke("timeline", sid, "--store", db, "-o", str(page))
    assert code == 0 and "3 tool calls" in said, output
    html = page.read_text()
    assert html.count("data-call-id=") == 3
    assert "http://" not in html and "https://" not in html  # self-contained


def test_resume_a_finished_session_with_a_new_prompt(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    db = str(tmp_path / "sessions.db")
    _invoke(
        "run",
        "survey",
        "--scripted",
        str(_survey(tmp_path)),
        "--store",
        db,
        "--permission-mode",
        "accept_edits",
    )
    store = SQLiteSessionStore(db)
    sid = store.list_sessions()[0].id
    more = script(tmp_path / "more.json", final("Nothing else to do."))
    code, _, output = _invoke("resume", sid[:8], "--scripted", str(more), "--store", db)
    assert code == 2 and "give a prompt" in output
    code, _, output = _invoke("resume", sid[:8], "more", "--store", db)
    assert (
        code == 2 and "no model configured" in output
    )  # a scripted session names none
    code, stdout, output = _invoke(
        "resume", sid[:8], "anything else?", "--scripted", str(more), "--store", db
    )
    assert code == 0, output
    assert "resumed session" in stdout
    texts = [m.text for m in store.messages(sid)]
    assert texts[-2:] == ["anything else?", "Nothing else to do."]
    assert len(store.runs(sid)) == 2
    store.close()


def test_the_default_store_lives_under_toolweave_home(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    steps = script(tmp_path / "s.json", final("hi"))
    code, _, output = _invoke("run", "hello", "--scripted", str(steps))
    assert code == 0, output
    store = SQLiteSessionStore(home / "sessions.db")
    assert [s.title for s in store.list_sessions()] == ["hello"]
    store.close()


def test_without_a_terminal_asks_follow_the_permission_mode(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "toolweave.toml").write_text('[permissions]\nask = ["bash"]\n')
    steps = script(
        tmp_path / "s.json",
        tools(
            ("b1", "bash", {"command": "echo hi > made.txt"}),
            ("w1", "write", {"path": "w.txt", "content": "x"}),
        ),
        final("ok"),
    )
    db = str(tmp_path / "s.db")
    code, stdout, output = _invoke(
        "run", "t", "--scripted", str(steps), "--json", "--store", db
    )
    assert code == 0, output
    results = {
        line["result"]["call_id"]: line["result"]
        for line in json_lines(stdout)
        if line["type"] == "ToolResultReady"
    }
    assert results["b1"]["is_error"] and not (workspace / "made.txt").exists()
    assert results["w1"]["is_error"] and not (workspace / "w.txt").exists()
    code, stdout, output = _invoke(
        "run",
        "t",
        "--scripted",
        str(steps),
        "--json",
        "--store",
        db,
        "--permission-mode",
        "accept_edits",
    )
    assert code == 0, output
    results = {
        line["result"]["call_id"]: line["result"]
        for line in json_lines(stdout)
        if line["type"] == "ToolResultReady"
    }
    assert results["b1"]["is_error"] and not (workspace / "made.txt").exists()
    assert not results["w1"]["is_error"] and (workspace / "w.txt").exists()
    (workspace / "w.txt").unlink()
    code, stdout, output = _invoke(
        "run",
        "t",
        "--scripted",
        str(steps),
        "--json",
        "--store",
        db,
        "--permission-mode",
        "plan",
    )
    assert code == 0, output
    results = {
        line["result"]["call_id"]: line["result"]
        for line in json_lines(stdout)
        if line["type"] == "ToolResultReady"
    }
    assert results["w1"]["is_error"] and not (workspace / "w.txt").exists()


def test_clear_errors_for_a_missing_model_a_bad_mode_and_an_unknown_session(
    tmp_path: Path, workspace: Path
) -> None:
    code, _, output = _invoke("run", "do it")
    assert code == 2 and "no model configured" in output
    code, _, output = _invoke(
        "run", "do it", "--scripted", "x.json", "--permission-mode", "yolo"
    )
    assert code == 2 and "--permission-mode" in output
    code, _, output = _invoke(
        "run", "do it", "--scripted", str(tmp_path / "missing.json")
    )
    assert code == 2 and "cannot read the script" in output
    missing = tmp_path / "s.db"
    code, _, output = _invoke("show", "abc", "--store", str(missing))
    assert code == 2 and f"no session database at {missing}" in output
    assert not missing.exists()
    SQLiteSessionStore(missing).close()
    code, _, output = _invoke("show", "abc", "--store", str(missing))
    assert code == 2 and "no session 'abc'" in output
    (workspace / "toolweave.toml").write_text('[permissions]\ndeny = ["bash(oops"]\n')
    steps = script(tmp_path / "s.json", final("hi"))
    db = tmp_path / "bad.db"
    code, _, output = _invoke("run", "x", "--scripted", str(steps), "--store", str(db))
    assert code == 2 and "malformed permission rule" in output
    store = SQLiteSessionStore(db)
    assert store.list_sessions() == []  # refused before anything was written
    store.close()


def test_the_schedules_demo_is_still_there() -> None:
    code, stdout, output = _invoke("demo", "--help")
    assert code == 0 and "--schedules" in stdout, output
    out = io.StringIO()
    clock = trio.testing.MockClock(autojump_threshold=0)  # its sleeps take no real time
    makespans = anyio.run(
        run_schedules_demo,
        Console(file=out, width=120),
        backend="trio",
        backend_options={"clock": clock},
    )
    for policy in ("sequential", "all_or_nothing", "partition", "rwlock", "conflict"):
        assert f"{policy}:" in out.getvalue()
    assert makespans["conflict"] == min(makespans.values()) < makespans["sequential"]


def test_sessions_before_any_run_lists_none_and_creates_nothing(
    home: Path, workspace: Path
) -> None:
    code, stdout, output = _invoke("sessions")
    assert code == 0, output
    assert "No sessions yet" in stdout
    assert not (home / "sessions.db").exists()  # a read command writes nothing
