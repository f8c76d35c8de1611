"""The CLI with a model that repeats call ids (``call_0`` everywhere): run, show, resume.

Every call is stored as its own record, `show` and `timeline` list each once,
and the session resumes (before, the stored transcript was refused for its
duplicate ids and the second call's record overwrote the first's).
"""

from __future__ import annotations

from pathlib import Path

from cli_support import final, script, tools
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.sessions import CallState, SQLiteSessionStore


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_run_show_timeline_and_resume_with_call_0_everywhere(
    tmp_path: Path, workspace: Path
) -> None:
    for name in ("a", "b", "c"):
        (workspace / f"{name}.txt").write_text(f"content of {name}\n")
    db = str(tmp_path / "sessions.db")
    steps = script(
        tmp_path / "s.json",
        tools(
            ("call_0", "read", {"path": "a.txt"}),
            ("call_0", "read", {"path": "b.txt"}),
        ),
        tools(("call_0", "read", {"path": "c.txt"})),
        final("Read all three."),
    )
    code, output = _invoke("run", "read", "--scripted", str(steps), "--store", db)
    assert code == 0, output
    store = SQLiteSessionStore(db)
    sid = store.list_sessions()[0].id
    records = store.calls(sid)
    assert [(r.call.id, r.call.key, r.state) for r in records] == [
        ("call_0", "1.0", CallState.FINISHED),
        ("call_0", "1.1", CallState.FINISHED),
        ("call_0", "2.0", CallState.FINISHED),
    ]
    texts = [r.result.text for r in records if r.result is not None]
    for name, text in zip("abc", texts, strict=True):
        assert f"content of {name}" in text

    code, output = _invoke("show", sid[:8], "--store", db)
    assert code == 0, output
    assert output.count("↳ call_0") == 3
    page = tmp_path / "t.html"
    code, output = _invoke("timeline", sid[:8], "--store", db, "-o", str(page))
    assert code == 0, output
    assert page.read_text().count('data-call-id="call_0"') == 3

    more = script(tmp_path / "more.json", final("Nothing more."))
    code, output = _invoke(
        "resume", sid[:8], "anything else?", "--scripted", str(more), "--store", db
    )
    assert code == 0, output
    assert [m.text for m in store.messages(sid)][-2:] == [
        "anything else?",
        "Nothing more.",
    ]
    store.close()
