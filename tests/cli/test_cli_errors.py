"""Errors print literally: an exception's text is never read as rich markup.

``pip install 'toolweave[ray]'`` printed as markup loses ``[ray]``, and a
message holding ``[/]`` makes rich raise; every command prints its errors
through `toolweave.cli._errors`, checked here through the real app.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.cli._errors import fail, print_error

SRC_CLI = Path(__file__).resolve().parents[2] / "src" / "toolweave" / "cli"

MARKUP_LOOKALIKES = [
    "pip install 'toolweave[ray]'",
    "a closing tag [/] alone",
    "[bold red]not a style[/bold red]",
    "a link [link=file:///etc/passwd]x[/link]",
    r"an escaped \[ray] stays as written",
]


@pytest.mark.parametrize("message", MARKUP_LOOKALIKES)
def test_print_error_prints_the_message_literally(message: str) -> None:
    out = io.StringIO()
    print_error(ValueError(message), Console(file=out, width=200))
    assert out.getvalue() == f"error: {message}\n"


def test_fail_prints_and_gives_exit_status_2() -> None:
    out = io.StringIO()
    exit_ = fail("needs 'toolweave[ray]'", Console(file=out, width=200))
    assert exit_.exit_code == 2
    assert out.getvalue() == "error: needs 'toolweave[ray]'\n"


def test_a_long_error_is_not_wrapped() -> None:
    out = io.StringIO()
    message = "x" * 150 + " [ray] " + "y" * 150
    print_error(message, Console(file=out, width=40))
    assert out.getvalue() == f"error: {message}\n"


def test_toolweave_run_prints_a_bracketed_error_literally(workspace: Path) -> None:
    del workspace
    result = CliRunner().invoke(app, ["run", "task", "--permission-mode", "[ray]"])
    assert result.exit_code == 2, result.output
    assert "not '[ray]'" in result.output


def test_toolweave_batch_prints_a_bracketed_error_literally(workspace: Path) -> None:
    tasks = workspace / "tasks.jsonl"
    tasks.write_text(json.dumps({"prompt": "p"}) + "\n")
    result = CliRunner().invoke(
        app, ["batch", str(tasks), "--tools", "none", "--permission-mode", "[ray]"]
    )
    assert result.exit_code == 2, result.output
    assert "'[ray]'" in result.output


def test_toolweave_show_prints_a_bracketed_store_path_literally(
    workspace: Path,
) -> None:
    store = workspace / "[ray]" / "missing.db"
    result = CliRunner().invoke(app, ["show", "abc", "--store", str(store)])
    assert result.exit_code == 2, result.output
    assert "[ray]" in result.output


def test_no_cli_module_but_the_helper_writes_an_error_line_as_markup() -> None:
    offenders = [
        path.name
        for path in sorted(SRC_CLI.rglob("*.py"))
        if path.name != "_errors.py" and "red]error" in path.read_text()
    ]
    assert offenders == []
