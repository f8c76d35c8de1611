"""The README's runnable examples run as pasted (each in a fresh interpreter).

A block is runnable when the line before its fence is the marker comment
``<!-- tests/test_readme.py runs this block as it stands -->``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
MARKER = "<!-- tests/test_readme.py runs this block as it stands -->"


def runnable_blocks() -> list[str]:
    """The marked ```python blocks of the README, in order."""
    pattern = re.compile(re.escape(MARKER) + r"\n```python\n(.*?)\n```", re.DOTALL)
    return pattern.findall(README.read_text(encoding="utf-8"))


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_readme_marks_its_runnable_examples() -> None:
    blocks = runnable_blocks()
    assert len(blocks) == 2
    assert "tw.Agent(" in blocks[0] and "ScriptedModel" in blocks[0]
    assert "@tw.tool" in blocks[0] and "ToolRunner" in blocks[1]


def test_the_first_agent_example_runs_as_pasted(tmp_path: Path) -> None:
    done = _run(runnable_blocks()[0], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "completed - Oslo has snow and Lisbon sun; I noted it.",
        "['Oslo: snow. Lisbon: sun.']",
    ]


def test_the_scheduler_example_runs_and_errors_come_out_clean(tmp_path: Path) -> None:
    done = _run(runnable_blocks()[1], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 ok ok" and lines[1] == "2 ok new"
    assert lines[2].startswith("3 error FileNotFoundError"), lines[2]
    assert "Traceback" not in done.stdout + done.stderr
    assert (tmp_path / "a.txt").read_text() == "new"


@pytest.mark.parametrize("text", [README.read_text(encoding="utf-8")])
def test_the_readme_cites_no_source_documents(text: str) -> None:
    assert not re.search(r"\bseeds?\b", text, re.IGNORECASE)
