"""A CLI run saves large tool output beside the session store (issue 13 item 8)."""

from __future__ import annotations

import re
from pathlib import Path

from cli_support import final, json_lines, script, tools
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.sessions import results_dir_beside

_SAVED = re.compile(r"Full output saved to: (\S+)")


def test_a_150kb_bash_output_is_saved_beside_the_store_and_the_model_gets_the_path(
    tmp_path: Path, workspace: Path
) -> None:
    body = "".join(f"row {i:06d} " + "z" * 40 + "\n" for i in range(3_000))
    (workspace / "big.txt").write_text(body)
    steps = script(
        tmp_path / "dump.json",
        tools(("b1", "bash", {"command": "cat big.txt"})),
        final("done"),
    )
    db = tmp_path / "sessions.db"
    result = CliRunner().invoke(
        app, ["run", "dump", "--scripted", str(steps), "--json", "--store", str(db)]
    )
    assert result.exit_code == 0, result.output
    lines = json_lines(result.stdout)
    sid = lines[0]["session_id"]
    (ready,) = [line for line in lines if line["type"] == "ToolResultReady"]
    content = ready["result"]["content"]
    found = _SAVED.search(content)
    assert found is not None, content
    saved = Path(found.group(1))
    assert saved.is_relative_to(results_dir_beside(db, sid))
    assert saved.read_text() == body
    assert len(content) < 5_000 and "row 000000" in content


def test_the_results_dir_of_a_session_is_beside_the_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert results_dir_beside(db, "abc123") == tmp_path / "s.db.results" / "abc123"
    odd = results_dir_beside(db, "../x")
    assert odd.parent == tmp_path / "s.db.results"
    assert odd.name.startswith("_x-") and odd != results_dir_beside(db, "_x")
