"""A newcomer's stumbles, each through the real `toolweave` entry point."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import final, script, tools

import toolweave as tw
from toolweave.cli._build import warning_words
from toolweave.cli._turns import TurnTracker
from toolweave.events import Warning as WarningEvent
from toolweave.loop import CostTracker, PriceTable
from toolweave.sessions import SQLiteSessionStore

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


def toolweave(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real command in a subprocess, with no terminal on stdin."""
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai:gpt-4.1", "OPENAI_API_KEY"),
        ("openai-responses:gpt-4.1", "OPENAI_API_KEY"),
        ("gpt-4.1", "OPENAI_API_KEY"),
    ],
)
def test_a_missing_api_key_fails_fast_in_one_line(
    tmp_path: Path, workspace: Path, home: Path, model: str, variable: str
) -> None:
    db = tmp_path / "s.db"
    done = toolweave(
        "run", "x", "--model", model, "--store", str(db), cwd=workspace,
        env={variable: ""},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and variable in lines[0] and "not set" in lines[0], lines
    assert "Traceback" not in done.stderr and "resume" not in done.stdout
    assert not db.exists()  # nothing stored, not even an empty database
    assert not (home / "sessions.db").exists()


def test_a_key_in_the_environment_gets_past_the_check(
    tmp_path: Path, workspace: Path
) -> None:
    """The check looks at the variable, not at anything else: with it set, the run
    gets as far as the (unreachable) server, and keeps no session of a run that
    reached no model (tests/cli/test_cli_unreached_model.py)."""
    db = tmp_path / "s.db"
    done = toolweave(
        "run", "x", "--model", "anthropic:claude-sonnet-4-5", "--json",
        "--store", str(db), cwd=workspace,
        env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )  # fmt: skip
    assert "is not set" not in done.stderr
    assert "cannot connect to 127.0.0.1:9" in done.stderr, done.stderr
    store = SQLiteSessionStore(db)
    assert store.list_sessions() == []
    store.close()


def test_version(workspace: Path) -> None:
    done = toolweave("--version", cwd=workspace)
    assert done.returncode == 0
    assert done.stdout.strip() == f"toolweave {tw.__version__}"


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("run", "toolweave run [OPTIONS] TASK"),
        ("resume", "toolweave resume [OPTIONS] ID [PROMPT]"),
        ("show", "toolweave show [OPTIONS] ID"),
        ("timeline", "toolweave timeline [OPTIONS] ID"),
        ("batch", "toolweave batch [OPTIONS] TASKS"),
        ("sessions", "toolweave sessions [OPTIONS]"),
        ("demo", "toolweave demo [OPTIONS]"),
    ],
)
def test_help_names_arguments_plainly_and_flags_take_no_type(
    workspace: Path, command: str, usage: str
) -> None:
    done = toolweave(command, "--help", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert usage in done.stdout, done.stdout
    assert "{" not in done.stdout and "<bool>" not in done.stdout, done.stdout


def test_root_help_lists_version_without_a_type(workspace: Path) -> None:
    done = toolweave("--help", cwd=workspace)
    assert "--version" in done.stdout and "<bool>" not in done.stdout


def _scripted_run(tmp_path: Path, workspace: Path, title: str, *extra: str) -> str:
    steps = script(
        tmp_path / "s.json",
        tools(("r1", "read", {"path": "a.txt"})),
        final("done"),
    )
    (workspace / "a.txt").write_text("alpha\n")
    done = toolweave("run", title, "--scripted", str(steps), *extra, cwd=workspace)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sessions_fit_80_columns_with_id_prefix_and_title(
    tmp_path: Path, workspace: Path
) -> None:
    title = "make the parser accept trailing commas in every list literal we have"
    _scripted_run(tmp_path, workspace, title)
    done = toolweave("sessions", cwd=workspace)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    (row,) = [line for line in lines if "completed" in line]
    store = SQLiteSessionStore(Path(os.environ["TOOLWEAVE_HOME"]) / "sessions.db")
    (session,) = store.list_sessions()
    store.close()
    assert session.id[:8] in row and "make the parser accept" in row, row
    shown = toolweave("show", session.id[:8], cwd=workspace)
    assert shown.returncode == 0 and title in shown.stdout  # the prefix is enough


@pytest.mark.parametrize(
    "command",
    [["sessions"], ["show", "abc"], ["timeline", "abc"], ["resume", "abc", "more"]],
)
def test_a_mistyped_store_for_a_read_command_is_an_error(
    tmp_path: Path, workspace: Path, command: list[str]
) -> None:
    typo = tmp_path / "sesions.db"
    done = toolweave(*command, "--store", str(typo), cwd=workspace)
    assert done.returncode == 2, done.stdout
    assert f"no session database at {typo}" in done.stderr, done.stderr
    assert not typo.exists()


def test_the_price_advice_is_not_given_for_a_scripted_model(
    tmp_path: Path, workspace: Path
) -> None:
    out = _scripted_run(tmp_path, workspace, "read it")
    assert "no price known" not in out and "AgentConfig" not in out, out


def test_the_price_advice_for_an_unpriced_model_is_in_cli_words_once() -> None:
    say = warning_words("anthropic:claude-future-9")
    tracker = TurnTracker(say=say)
    tracker.handle(WarningEvent(_unpriced("claude-future-9"), at=0.0))
    tracker.handle(WarningEvent("something else", at=0.0))
    (turn,) = tracker.turns
    assert turn.notes == [
        "no price known for claude-future-9: its cost is shown as $0",
        "something else",
    ]
    for free in ("scripted:s.json", "openai-compatible:qwen"):
        assert warning_words(free)(_unpriced("qwen")) is None
        assert warning_words(free)("other") == "other"


def _unpriced(model: str) -> str:
    """What the loop itself says (one CostTracker, first use of the model)."""
    warning = CostTracker(PriceTable({}, include_builtin=False)).add(
        model, tw.Usage(input_tokens=1, output_tokens=1)
    )
    assert warning is not None and "AgentConfig" in warning
    return warning


def test_sessions_after_a_demo_lists_the_demo(tmp_path: Path, workspace: Path) -> None:
    demo = toolweave("demo", "--dir", str(tmp_path / "demo"), cwd=workspace)
    assert demo.returncode == 0, demo.stderr
    assert "--store" not in demo.stdout  # the suggested commands need none
    done = toolweave("sessions", cwd=workspace)
    assert "No sessions yet" not in done.stdout and "completed" in done.stdout


def _batch_tasks(tmp_path: Path, workspace: Path, script_file: Path) -> Path:
    """One task whose model is the very script file `--scripted` reads."""
    tasks = tmp_path / "tasks.jsonl"
    line = {
        "id": "t1",
        "prompt": "write it",
        "workspace": str(workspace),
        "model": "scripted:" + script_file.read_text(),
    }
    tasks.write_text(json.dumps(line) + "\n")
    return tasks


def _writer_script(tmp_path: Path) -> Path:
    return script(
        tmp_path / "writer.json",
        {
            **tools(("w1", "write", {"path": "made.txt", "content": "x\n"})),
            "stop_reason": "tool_use",
            "chunk_delay": 0.0,
        },
        final("written"),
    )


def test_batch_without_tools_refuses_clearly(tmp_path: Path, workspace: Path) -> None:
    tasks = _batch_tasks(tmp_path, workspace, _writer_script(tmp_path))
    done = toolweave("batch", str(tasks), "--no-progress", cwd=workspace)
    assert done.returncode == 2
    assert "--tools coding" in done.stderr and "--tools none" in done.stderr
    assert not (tmp_path / "tasks.results.jsonl").exists()


def test_one_script_format_for_scripted_and_batch(
    tmp_path: Path, workspace: Path
) -> None:
    """The file `run --scripted` replays also drives a batch session with coding tools."""
    writer = _writer_script(tmp_path)
    run = toolweave(
        "run", "write it", "--scripted", str(writer),
        "--permission-mode", "accept_edits", cwd=workspace,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (workspace / "made.txt").read_text() == "x\n"
    (workspace / "made.txt").unlink()
    tasks = _batch_tasks(tmp_path, workspace, writer)
    done = toolweave(
        "batch", str(tasks), "--tools", "coding", "--permission-mode",
        "accept_edits", "--no-progress", cwd=workspace,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (record,) = [
        json.loads(line)
        for line in (tmp_path / "tasks.results.jsonl").read_text().splitlines()
    ]
    assert record["status"] == "completed", record
    assert (workspace / "made.txt").read_text() == "x\n"


def test_batch_coding_tools_without_a_mode_deny_the_write_and_say_how(
    tmp_path: Path, workspace: Path
) -> None:
    tasks = _batch_tasks(tmp_path, workspace, _writer_script(tmp_path))
    done = toolweave(
        "batch", str(tasks), "--tools", "coding", "--no-progress", cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    assert not (workspace / "made.txt").exists()
    store = SQLiteSessionStore(Path(os.environ["TOOLWEAVE_HOME"]) / "sessions.db")
    (session,) = store.list_sessions()
    (call,) = store.calls(session.id)
    store.close()
    assert call.result is not None and call.result.is_error
    assert "--permission-mode accept_edits" in call.result.text


def test_batch_tools_none_runs_text_only_sessions(
    tmp_path: Path, workspace: Path
) -> None:
    text_only = script(tmp_path / "t.json", final("an answer"))
    tasks = _batch_tasks(tmp_path, workspace, text_only)
    done = toolweave(
        "batch", str(tasks), "--tools", "none", "--no-progress", cwd=workspace
    )
    assert done.returncode == 0, done.stderr
    assert "completed" in (tmp_path / "tasks.results.jsonl").read_text()


def _timeline_session(tmp_path: Path, workspace: Path) -> str:
    """Two iterations of different lengths, an error and a held-back call."""
    (workspace / "a.txt").write_text("alpha\n")
    steps = script(
        tmp_path / "t.json",
        {
            **tools(
                ("r1", "read", {"path": "a.txt"}),
                ("w1", "write", {"path": "a.txt", "content": "new\n"}),
                ("r2", "read", {"path": "missing.txt"}),
            ),
            "delay": 0.4,
        },
        {**tools(("r3", "read", {"path": "a.txt"})), "delay": 0.01},
        final("done"),
    )
    done = toolweave(
        "run", "t", "--scripted", str(steps), "--permission-mode", "accept_edits",
        cwd=workspace,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    store = SQLiteSessionStore(Path(os.environ["TOOLWEAVE_HOME"]) / "sessions.db")
    (session,) = store.list_sessions()
    store.close()
    return session.id


def test_the_timeline_legend_explains_every_mark_and_one_scale_is_an_option(
    tmp_path: Path, workspace: Path
) -> None:
    sid = _timeline_session(tmp_path, workspace)
    spans: dict[bool, list[float]] = {}
    for same in (False, True):
        page = tmp_path / f"t{same}.html"
        extra = ["--same-scale"] if same else []
        done = toolweave("timeline", sid[:8], "-o", str(page), *extra, cwd=workspace)
        assert done.returncode == 0, done.stderr
        html = page.read_text()
        legend, _, body = html.split('id="legend"', 1)[1].partition("</div>")
        drawn = set(re.findall(r'<rect class="((?:bar \w+)|wait|model)"', body))
        drawn |= set(re.findall(r'<line class="(first-chunk)"', body))
        assert {"bar ok", "bar error", "wait", "model", "first-chunk"} <= drawn, drawn
        for mark in drawn:  # every mark on the page is in the legend, drawn alike
            assert f'class="{mark}"' in legend, mark
        assert "waiting to start" in legend
        spans[same] = [float(x) for x in re.findall(r'data-span="([0-9.]+)"', body)]
    assert len(spans[False]) == len(spans[True]) >= 2
    assert len(set(spans[True])) == 1 and spans[True][0] == max(spans[False])
    assert len(set(spans[False])) > 1  # by default each iteration fills the width
