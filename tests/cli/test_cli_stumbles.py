"""A newcomer's stumbles, each through the real `toolweave` entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolweave as tw
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
    gets as far as the (unreachable) server."""
    db = tmp_path / "s.db"
    done = toolweave(
        "run", "x", "--model", "anthropic:claude-sonnet-4-5", "--json",
        "--store", str(db), cwd=workspace,
        env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )  # fmt: skip
    assert "is not set" not in done.stderr
    store = SQLiteSessionStore(db)
    assert len(store.list_sessions()) == 1
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
