"""`read` pages long files by characters too, says how to read on, and reads saved results."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import WorkspaceEscapeError
from toolweave.tools import SessionState
from toolweave.tools.builtin import ReadTool

pytestmark = pytest.mark.anyio

_NEXT = re.compile(r"read with offset=(\d+) for more\]$")


def _wide_lines(n: int, width: int = 60) -> str:
    return "".join(f"{i:05d} " + "x" * width + "\n" for i in range(1, n + 1))


async def _page_through(tool: ReadTool, path: str, state: SessionState) -> list[str]:
    """Every page of `path`, following each page's own directions."""
    pages: list[str] = []
    offset = 1
    while True:
        out = await run(tool, {"path": path, "offset": offset}, state)
        pages.append(out)
        found = _NEXT.search(out)
        if found is None:
            return pages
        offset = int(found.group(1))


def _numbered(pages: list[str]) -> list[str]:
    lines: list[str] = []
    for page in pages:
        body = page.split("\n\n[showing lines")[0]
        lines.extend(line.split("\t", 1)[1] for line in body.splitlines())
    return lines


def test_read_is_exempt_from_persistence(root: Path) -> None:
    assert ReadTool(root).max_result_chars is None


def test_a_char_cap_below_one_is_refused(root: Path) -> None:
    with pytest.raises(ValueError, match="max_chars"):
        ReadTool(root, max_chars=0)


async def test_a_long_file_pages_by_characters_and_every_line_arrives_once(
    root: Path, state: SessionState
) -> None:
    text = _wide_lines(1500)  # ~100 KB, under the 2,000-line limit
    (root / "big.txt").write_text(text)
    tool = ReadTool(root, max_chars=30_000)
    pages = await _page_through(tool, "big.txt", state)
    assert len(pages) >= 3
    for page in pages:
        assert len(page) <= 30_000 + 200  # the cap, plus the closing line
    for page in pages[:-1]:
        assert "page is full; the file continues" in page
    assert "[showing lines" not in pages[-1]
    assert _numbered(pages) == text.splitlines()


async def test_the_line_limit_still_ends_a_page_first_when_it_is_smaller(
    root: Path, state: SessionState
) -> None:
    (root / "f.txt").write_text(_wide_lines(50))
    out = await run(ReadTool(root), {"path": "f.txt", "limit": 10}, state)
    assert out.endswith(
        "[showing lines 1-10; the file continues: read with offset=11 for more]"
    )


async def test_one_line_longer_than_the_cap_is_still_shown(
    root: Path, state: SessionState
) -> None:
    (root / "wide.txt").write_text("y" * 1500 + "\nshort\n")
    out = await run(ReadTool(root, max_chars=100), {"path": "wide.txt"}, state)
    assert out.startswith("     1\t" + "y" * 1500)
    assert "offset=2" in out


async def test_a_saved_result_in_the_results_dir_can_be_read(
    root: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    saved = results / "tool-results" / "call_1.txt"
    saved.parent.mkdir(parents=True)
    saved.write_text("alpha\nbeta\n")
    state = SessionState(workspace=root, results_dir=results)
    out = await run(ReadTool(root), {"path": str(saved)}, state)
    assert out == "     1\talpha\n     2\tbeta"


@pytest.mark.parametrize(
    "given",
    [
        "{tmp}/elsewhere.txt",  # outside both
        "{tmp}/results/../elsewhere.txt",  # climbs out of the results dir
        "../elsewhere.txt",  # relative: only ever the workspace
    ],
)
async def test_paths_outside_workspace_and_results_dir_are_refused(
    root: Path, tmp_path: Path, given: str
) -> None:
    (tmp_path / "elsewhere.txt").write_text("secret\n")
    (tmp_path / "results").mkdir()
    state = SessionState(workspace=root, results_dir=tmp_path / "results")
    with pytest.raises(WorkspaceEscapeError):
        await run(ReadTool(root), {"path": given.format(tmp=tmp_path)}, state)


async def test_without_a_results_dir_outside_paths_are_refused(
    root: Path, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere.txt").write_text("secret\n")
    with pytest.raises(WorkspaceEscapeError):
        await run(
            ReadTool(root), {"path": str(tmp_path / "elsewhere.txt")}, SessionState()
        )
