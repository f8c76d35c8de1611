"""`[sandbox]` in toolweave.toml and `--sandbox` reach every bash call of a CLI run."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import final, json_lines, script, tools
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.tools.builtin import sandbox_backend


def _bash_result(tmp_path: Path, *flags: str) -> tuple[int, dict[str, object], str]:
    steps = script(
        tmp_path / "s.json",
        tools(("b1", "bash", {"command": "echo hi > made.txt"})),
        final("ok"),
    )
    args = ["run", "t", "--scripted", str(steps), "--json", "--store"]
    args += [str(tmp_path / "s.db"), "--permission-mode", "bypass", *flags]
    result = CliRunner().invoke(app, args)
    found = [
        line["result"]
        for line in json_lines(result.stdout)
        if line.get("type") == "ToolResultReady"
    ]
    return result.exit_code, found[0] if found else {}, result.output


@pytest.fixture(autouse=True)
def _needs_a_sandbox() -> None:
    if sandbox_backend() is None:
        pytest.skip("no sandbox backend here")


def test_the_project_file_sets_read_only(tmp_path: Path, workspace: Path) -> None:
    (workspace / "toolweave.toml").write_text('[sandbox]\nmode = "read-only"\n')
    code, result, output = _bash_result(tmp_path)
    assert code == 0, output
    assert result["is_error"] and "sandbox mode is 'read-only'" in str(
        result["content"]
    )
    assert not (workspace / "made.txt").exists()


def test_the_flag_wins_over_the_file(tmp_path: Path, workspace: Path) -> None:
    (workspace / "toolweave.toml").write_text('[sandbox]\nmode = "read-only"\n')
    code, result, output = _bash_result(tmp_path, "--sandbox", "workspace-write")
    assert code == 0, output
    assert not result["is_error"], result
    assert (workspace / "made.txt").read_text() == "hi\n"


def test_the_default_is_workspace_write(tmp_path: Path, workspace: Path) -> None:
    code, result, output = _bash_result(tmp_path)
    assert code == 0 and not result["is_error"], output
    assert (workspace / "made.txt").exists()


def test_a_bad_mode_is_a_clean_error(tmp_path: Path, workspace: Path) -> None:
    code, _, output = _bash_result(tmp_path, "--sandbox", "loose")
    assert code == 2
    assert "sandbox" in output and "read-only" in output
    assert not (workspace / "made.txt").exists()
