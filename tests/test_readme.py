"""The README's runnable examples run as pasted (each in a fresh interpreter).

A block is runnable when the line before its fence is the marker comment
``<!-- tests/test_readme.py runs this block as it stands -->``. The README's
blocks run here, and so does the scheduler example that moved to
docs/scheduling.md. Every relative link of the README and of docs/*.md points at a
file that exists and, for ``#anchor`` links into markdown, at a real heading.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
SCHEDULING = ROOT / "docs" / "scheduling.md"
MARKER = "<!-- tests/test_readme.py runs this block as it stands -->"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def runnable_blocks(page: Path = README) -> list[str]:
    """The marked ```python blocks of a page, in order."""
    pattern = re.compile(re.escape(MARKER) + r"\n```python\n(.*?)\n```", re.DOTALL)
    return pattern.findall(page.read_text(encoding="utf-8"))


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The `toolweave` command, as its console script runs it."""
    return subprocess.run(
        [sys.executable, "-c", "from toolweave.cli import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_readme_marks_its_runnable_examples() -> None:
    blocks = runnable_blocks()
    assert len(blocks) == 3
    assert "tw.Agent(" in blocks[0] and "ScriptedModel" in blocks[0]
    assert "@tw.tool" in blocks[0]
    assert "open_mcp_servers(" in blocks[1]
    assert "SessionRecorder(" in blocks[2] and "run_stream(" in blocks[2]
    (scheduler,) = runnable_blocks(SCHEDULING)
    assert "ToolRunner" in scheduler


def test_the_first_agent_example_runs_as_pasted(tmp_path: Path) -> None:
    done = _run(runnable_blocks()[0], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "completed - Oslo has snow and Lisbon sun; I noted it.",
        "['Oslo: snow. Lisbon: sun.']",
    ]


@pytest.mark.timeout(150)
def test_the_mcp_example_runs_a_real_server(tmp_path: Path) -> None:
    """The real mcp-server-time over stdio, started and shut down by the example."""
    done = _run(runnable_blocks()[1], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['mcp__time__convert_time', 'mcp__time__get_current_time']",
        "completed - Noon in UTC is 21:00 in Tokyo.",
    ]
    assert "Traceback" not in done.stderr


def test_a_recorded_library_run_works_with_show_and_timeline(tmp_path: Path) -> None:
    done = _run(runnable_blocks()[2], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["tool: clock -> 12:00", "completed - It is noon."]
    assert lines[2].startswith("session "), lines
    session_id = lines[2].removeprefix("session ")

    shown = _cli("show", session_id[:8], "--store", "sessions.db", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "What time is it?" in shown.stdout and "It is noon." in shown.stdout
    assert "12:00" in shown.stdout and "status: completed" in shown.stdout

    page = tmp_path / "timeline.html"
    drawn = _cli(
        "timeline", session_id, "--store", "sessions.db", "-o", str(page), cwd=tmp_path
    )
    assert drawn.returncode == 0, drawn.stderr
    assert "(1 tool calls)" in " ".join(drawn.stdout.split())  # rich wraps lines
    assert "clock" in page.read_text(encoding="utf-8")


def test_the_scheduler_example_runs_and_errors_come_out_clean(tmp_path: Path) -> None:
    (block,) = runnable_blocks(SCHEDULING)
    done = _run(block, tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 ok ok" and lines[1] == "2 ok new"
    assert lines[2].startswith("3 error FileNotFoundError"), lines[2]
    assert "Traceback" not in done.stdout + done.stderr
    assert (tmp_path / "a.txt").read_text() == "new"


@pytest.mark.parametrize("text", [README.read_text(encoding="utf-8")])
def test_the_readme_cites_no_source_documents(text: str) -> None:
    assert not re.search(r"\bseeds?\b", text, re.IGNORECASE)


# -- links ---------------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings (duplicates get ``-1``, ``-2``...)."""
    anchors: set[str] = set()
    for line in _FENCE.sub("", text).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading is None:
            continue
        slug = heading.group(1).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", slug).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in anchors:
            n += 1
            candidate = f"{slug}-{n}"
        anchors.add(candidate)
    return anchors


def relative_links(text: str) -> list[str]:
    """The link targets of a page outside code, except URLs and mail addresses."""
    prose = _CODE.sub("", _FENCE.sub("", text))
    return [
        target
        for target in _LINK.findall(prose)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)
    ]


def test_the_anchor_rules_follow_github() -> None:
    page = "# The `toolweave` command\n## Settings: `toolweave.toml`\n## A, b (c)\n## A, b (c)\n"
    assert heading_anchors(page) == {
        "the-toolweave-command",
        "settings-toolweavetoml",
        "a-b-c",
        "a-b-c-1",
    }
    assert relative_links("[x](a.md#b) [y](https://e.org) `[z](no.md)`") == ["a.md#b"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path, _, anchor = unquote(target).partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif (
            anchor
            and file.suffix == ".md"
            and anchor not in heading_anchors(file.read_text(encoding="utf-8"))
        ):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert broken == []
