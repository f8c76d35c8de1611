from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import ToolError, ToolInputError, WorkspaceEscapeError
from toolweave.messages import Image, Text, ToolCall
from toolweave.tools import (
    Access,
    Concurrency,
    Interrupt,
    SessionState,
    ToolContext,
    result_digest,
)
from toolweave.tools.builtin import ReadTool

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def _bump(path: Path, text: str) -> None:
    """Change a file so its fingerprint changes even within one mtime tick."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


async def test_reads_numbered_lines(root: Path, state: SessionState) -> None:
    (root / "a.py").write_text("import os\n\nprint(os.sep)\n")
    out = await run(ReadTool(root), {"path": "a.py"}, state)
    assert out == "     1\timport os\n     2\t\n     3\tprint(os.sep)"
    assert root / "a.py" in state.read_files


async def test_offset_and_limit_give_a_window(root: Path, state: SessionState) -> None:
    (root / "f.txt").write_text(_lines(10))
    out = await run(ReadTool(root), {"path": "f.txt", "offset": 4, "limit": 3}, state)
    body, note = out.split("\n\n")
    assert body.splitlines() == ["     4\tline 4", "     5\tline 5", "     6\tline 6"]
    assert "offset=7" in note
    tail = await run(ReadTool(root), {"path": "f.txt", "offset": 9}, state)
    assert tail == "     9\tline 9\n    10\tline 10"


async def test_long_file_is_cut_at_the_default_limit(
    root: Path, state: SessionState
) -> None:
    (root / "big.txt").write_text(_lines(2500))
    out = await run(ReadTool(root), {"path": "big.txt"}, state)
    assert "  2000\tline 2000" in out
    assert "line 2001" not in out
    assert "offset=2001" in out


async def test_crlf_and_invalid_utf8_and_long_lines(
    root: Path, state: SessionState
) -> None:
    (root / "mixed.txt").write_bytes(
        b"dos\r\nbad \xff byte\n" + b"x" * 20_000 + b"\nend\n"
    )
    out = await run(ReadTool(root), {"path": "mixed.txt"}, state)
    note, *lines = out.splitlines()
    assert note.startswith("[note: mixed.txt is not valid UTF-8 text")
    assert lines[0] == "     1\tdos"
    assert lines[1] == "     2\tbad \ufffd byte"
    assert "line cut" in lines[2]
    assert len(lines[2]) < 2200
    assert lines[3] == "     4\tend"


async def test_empty_file(root: Path, state: SessionState) -> None:
    (root / "empty").write_text("")
    assert await run(ReadTool(root), {"path": "empty"}, state) == "(empty file)"
    again = await run(ReadTool(root), {"path": "empty"}, state)
    assert "unchanged" in again


async def test_binary_file_is_an_error(root: Path, state: SessionState) -> None:
    (root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    with pytest.raises(ToolError, match="binary file"):
        await run(ReadTool(root), {"path": "blob.bin"}, state)
    assert root / "blob.bin" not in state.read_files


async def test_pipes_are_refused_not_waited_on(root: Path, state: SessionState) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await run(ReadTool(root), {"path": "pipe"}, state)


async def test_image_comes_back_as_an_image_block(
    root: Path, state: SessionState
) -> None:
    (root / "dot.png").write_bytes(PNG)
    out = await run(ReadTool(root), {"path": "dot.png"}, state)
    assert isinstance(out, tuple)
    text, image = out
    assert isinstance(text, Text)
    assert "image/png" in text.text
    assert isinstance(image, Image)
    assert image.media_type == "image/png"
    assert base64.b64decode(image.data) == PNG


async def test_missing_file_suggests_close_names(
    root: Path, state: SessionState
) -> None:
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("")
    with pytest.raises(
        ToolError, match=r"File not found: src/mian.py\. Did you mean: src/main.py"
    ):
        await run(ReadTool(root), {"path": "src/mian.py"}, state)


async def test_directory_and_offset_past_end_are_errors(
    root: Path, state: SessionState
) -> None:
    (root / "d").mkdir()
    (root / "f").write_text("one\n")
    with pytest.raises(ToolInputError, match="is a directory"):
        await run(ReadTool(root), {"path": "d"}, state)
    with pytest.raises(ToolInputError, match="past the end"):
        await run(ReadTool(root), {"path": "f", "offset": 5}, state)
    with pytest.raises(ToolInputError):
        ReadTool(root).parse({"path": "f", "offset": 0})
    with pytest.raises(ToolInputError):
        ReadTool(root).parse({"path": "f", "bogus": 1})


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/etc/hostname", "link.txt", "dir/secret.txt"]
)
async def test_escapes_never_read(
    root: Path, outside: Path, state: SessionState, path: str
) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dir").symlink_to(outside)
    with pytest.raises(WorkspaceEscapeError):
        await run(ReadTool(root), {"path": path}, state)
    assert len(state.read_files) == 0


async def test_absolute_path_inside_is_fine(root: Path, state: SessionState) -> None:
    (root / "a").write_text("x\n")
    assert await run(ReadTool(root), {"path": str(root / "a")}, state) == "     1\tx"


async def test_unchanged_reread_returns_a_short_note(
    root: Path, state: SessionState
) -> None:
    (root / "f.txt").write_text(_lines(50))
    tool = ReadTool(root)
    first = await run(tool, {"path": "f.txt"}, state)
    assert "line 50" in first
    again = await run(tool, {"path": "f.txt"}, state)
    assert again.startswith("[f.txt lines 1-50 are unchanged since your last read")
    inner = await run(tool, {"path": "f.txt", "offset": 10, "limit": 5}, state)
    assert "unchanged" in inner and "lines 10-14" in inner
    forced = await run(tool, {"path": "f.txt", "force": True}, state)
    assert forced == first


async def test_reading_a_new_range_is_not_deduplicated(
    root: Path, state: SessionState
) -> None:
    (root / "f.txt").write_text(_lines(50))
    tool = ReadTool(root)
    await run(tool, {"path": "f.txt", "limit": 10}, state)
    wider = await run(tool, {"path": "f.txt", "offset": 5, "limit": 10}, state)
    assert "    14\tline 14" in wider
    rest = await run(tool, {"path": "f.txt", "offset": 11}, state)
    assert "line 50" in rest
    assert "unchanged" in await run(
        tool, {"path": "f.txt", "offset": 20, "limit": 3}, state
    )


async def test_changed_file_gets_a_stale_hint(root: Path, state: SessionState) -> None:
    path = root / "f.txt"
    path.write_text("old\n")
    tool = ReadTool(root)
    await run(tool, {"path": "f.txt"}, state)
    _bump(path, "new content\n")
    out = await run(tool, {"path": "f.txt"}, state)
    assert out.startswith("[note: f.txt changed on disk since your last read")
    assert out.endswith("     1\tnew content")
    # the hint is given once: the ledger now knows the new version
    assert "unchanged" in await run(tool, {"path": "f.txt"}, state)


def test_declaration(root: Path, outside: Path) -> None:
    (root / "src").mkdir()
    (root / "alias").symlink_to(root / "src")
    tool = ReadTool(root)
    assert tool.name == "read"
    assert tool.interrupt is Interrupt.BLOCK
    args = tool.parse({"path": "src/a.py"})
    assert tool.concurrency_for(args) is Concurrency.SAFE
    assert tool.access_for(args) == Access(reads=(f"fs:{root}/src/a.py",))
    # a link and its target claim the same key
    assert tool.access_for(tool.parse({"path": "alias/a.py"})) == Access(
        reads=(f"fs:{root}/src/a.py",)
    )
    # an escaping path cannot be declared: fail closed to a barrier
    assert tool.access_for(tool.parse({"path": "../x"})) == Access.barrier()
    assert "path" in tool.anthropic_spec()["input_schema"]["properties"]


class _Transcript:
    """A transcript view holding the given (call, text) pairs, as the loop's does."""

    def __init__(self) -> None:
        self.results: list[tuple[ToolCall, str]] = []

    def shows(self, length: int, digest: bytes) -> bool:
        return any(
            len(text) == length and result_digest(call, text) == digest
            for call, text in self.results
        )


async def _read_as(
    tool: ReadTool, call_id: str, raw: dict[str, object], state: SessionState
) -> tuple[ToolCall, str]:
    call = ToolCall(call_id, "read", raw)
    text = await tool.call(tool.parse(raw), ToolContext(call, state=state))
    return call, text


async def test_a_reread_is_unchanged_only_if_the_transcript_holds_the_earlier_result(
    root: Path,
) -> None:
    """Issue 24, item 10: the note refers only to results the model will see."""
    (root / "f.txt").write_text(_lines(5))
    tool = ReadTool(root)
    transcript = _Transcript()
    state = SessionState(transcript=transcript)
    first = await _read_as(tool, "1", {"path": "f.txt"}, state)
    # not in the transcript (another run's, compacted away, replaced): read again
    _, again = await _read_as(tool, "2", {"path": "f.txt"}, state)
    assert "line 5" in again and "unchanged" not in again
    # in it: the note, which names a result the model can see
    transcript.results.append(first)
    _, noted = await _read_as(tool, "3", {"path": "f.txt", "limit": 2}, state)
    assert "unchanged since your last read" in noted
    # the same call with another text (a hook's rewrite, a preview) is not it
    transcript.results = [(first[0], first[1] + " ")]
    _, shown = await _read_as(tool, "4", {"path": "f.txt"}, state)
    assert "line 5" in shown


async def test_a_change_on_disk_forgets_which_results_showed_the_file(
    root: Path,
) -> None:
    (root / "f.txt").write_text(_lines(5))
    tool = ReadTool(root)
    transcript = _Transcript()
    state = SessionState(transcript=transcript)
    transcript.results.append(await _read_as(tool, "1", {"path": "f.txt"}, state))
    _bump(root / "f.txt", _lines(6))
    _, after = await _read_as(tool, "2", {"path": "f.txt"}, state)
    assert "line 6" in after and "changed on disk" in after
    [record] = [state.read_files.get(root / "f.txt")]
    assert record is not None and len(record.shown) == 1  # only the new result
