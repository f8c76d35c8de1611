"""The declaration audit in the CLI: --audit / `audit =`, the live marker, store, show, timeline."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from cli_support import script
from rich.console import Console
from test_cli_commands import _invoke, _survey

import toolweave as tw
from toolweave.cli._audit_view import MARKER, audit_summary, stored_violations
from toolweave.cli._drive import drive_run
from toolweave.cli._output import LiveOutput
from toolweave.cli._show import render_transcript
from toolweave.cli._timeline import write_timeline
from toolweave.cli._turns import TurnTracker
from toolweave.models import ScriptedModel
from toolweave.sessions import SessionRecorder, SQLiteSessionStore


def _agent(notes: Path, audit: str) -> tw.Agent:
    @tw.tool(concurrency=tw.Concurrency.SAFE, access=tw.Access(reads=(f"fs:{notes}",)))
    def read_note(name: str) -> str:
        """Reads a note and, undeclared, records that it did."""
        (notes / ".last-read").write_text(name)
        return (notes / name).read_text()

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=tw.Access(reads=(f"fs:{notes}",)))
    def peek(name: str) -> str:
        """Only reads."""
        return (notes / name).read_text()

    script = [
        tw.ModelResponse(
            [
                tw.ToolCall("n1", "read_note", {"name": "a"}),
                tw.ToolCall("p1", "peek", {"name": "a"}),
            ],
            stop_reason=tw.StopReason.TOOL_USE,
        ),
        tw.ModelResponse([tw.Text("read it")]),
    ]
    return tw.Agent(
        ScriptedModel(script, name="scripted"),
        [read_note, peek],
        config=tw.AgentConfig(audit=audit),  # type: ignore[arg-type]
    )


@pytest.mark.anyio
@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_a_violation_is_marked_live_stored_shown_and_on_the_timeline(
    tmp_path: Path, audit: str
) -> None:
    notes = (tmp_path / "notes").resolve()
    notes.mkdir()
    (notes / "a").write_text("hello")
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    session = store.create_session(workspace=str(notes), model="scripted", title="t")
    recorder = SessionRecorder(store, session.id, model="scripted")
    out = io.StringIO()
    output = LiveOutput(Console(file=out, width=160), TurnTracker())
    output.audit = audit
    result = await drive_run(
        _agent(notes, audit), "go", recorder=recorder, output=output
    )
    assert result.finished is not None
    text = out.getvalue()
    assert MARKER in text  # the marker on the call's row
    assert f"declaration audit ({audit}): 1 violation in 1 call of read_note" in text
    assert (notes / ".last-read").exists() is (audit == "warn")

    [stored] = stored_violations(store, session.id)
    assert (stored.call_id, stored.tool, stored.operation) == (
        "n1",
        "read_note",
        "open",
    )
    assert stored.target == f"{notes}/.last-read" and stored.blocked is (
        audit == "enforce"
    )
    assert stored.source.startswith(__file__ + ":")

    shown = io.StringIO()
    console = Console(file=shown, width=200)
    for part in render_transcript(store, session.id):
        console.print(part)
    assert "declaration violations: 1" in shown.getvalue()
    assert f"n1 · read_note: open {notes}/.last-read" in shown.getvalue()

    page, _ = write_timeline(store, session.id, tmp_path / "t.html")
    html = page.read_text()
    assert html.count('data-violations="1"') == 1
    assert html.count('data-violations="0"') == 1
    assert MARKER in html
    store.close()


def test_the_summary_line() -> None:
    assert audit_summary("off", []) is None
    assert audit_summary("warn", []) == "declaration audit (warn): no violations"


def test_run_with_audit_from_the_flag_and_from_the_settings(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    db = str(tmp_path / "sessions.db")
    survey = str(_survey(tmp_path))
    mode = ["--permission-mode", "accept_edits"]  # the survey writes c.txt
    code, stdout, output = _invoke(
        "run",
        "survey",
        "--scripted",
        survey,
        "--store",
        db,
        "--audit",
        "enforce",
        *mode,
    )
    assert code == 0, output
    assert "declaration audit (enforce): no violations" in stdout, output
    assert "✗" not in stdout  # the built-in tools' calls all went through

    (workspace / "toolweave.toml").write_text('audit = "warn"\n')
    code, stdout, output = _invoke(
        "run", "survey", "--scripted", survey, "--store", db, *mode
    )
    assert code == 0, output
    assert "declaration audit (warn): no violations" in stdout

    code, stdout, output = _invoke(
        "run", "survey", "--scripted", survey, "--store", db, "--audit", "loud"
    )
    assert code == 2 and "--audit must be off, warn or enforce" in output


def test_a_bad_audit_setting_is_a_clear_error(tmp_path: Path, workspace: Path) -> None:
    (workspace / "toolweave.toml").write_text('audit = "sometimes"\n')
    steps = script(tmp_path / "s.json", {"text": "hi"})
    code, _, output = _invoke("run", "x", "--scripted", str(steps))
    assert code == 2 and "audit" in output, output
