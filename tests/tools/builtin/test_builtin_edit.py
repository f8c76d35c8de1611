from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import ToolError, ToolInputError, WorkspaceEscapeError
from toolweave.tools import Access, Concurrency, Interrupt, SessionState
from toolweave.tools.builtin import EditTool, ReadTool, WriteTool

pytestmark = pytest.mark.anyio


def _touch_later(path: Path, text: str) -> None:
    """Change a file behind the session's back, with a visibly new mtime."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


async def _read(root: Path, path: str, state: SessionState) -> str:
    out = await run(ReadTool(root), {"path": path}, state)
    assert isinstance(out, str)
    return out


async def test_edit_replaces_a_unique_string(root: Path, state: SessionState) -> None:
    (root / "a.py").write_text("def f():\n    return 1\n\n\nx = f()\n")
    await _read(root, "a.py", state)
    out = await run(
        EditTool(root),
        {"path": "a.py", "old_string": "return 1", "new_string": "return 2"},
        state,
    )
    assert (root / "a.py").read_text() == "def f():\n    return 2\n\n\nx = f()\n"
    assert out.startswith("Edited a.py: replaced 1 occurrence.\n")
    assert "     2\t    return 2" in out


async def test_not_unique_says_how_many(root: Path, state: SessionState) -> None:
    (root / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    await _read(root, "a.txt", state)
    edit = EditTool(root)
    with pytest.raises(
        ToolError, match=r"matches 3 places in a\.txt.*replace_all=true"
    ):
        await run(
            edit, {"path": "a.txt", "old_string": "x = 1", "new_string": "y"}, state
        )
    assert (root / "a.txt").read_text() == "x = 1\nx = 1\nx = 1\n"
    out = await run(
        edit,
        {
            "path": "a.txt",
            "old_string": "x = 1",
            "new_string": "y = 2",
            "replace_all": True,
        },
        state,
    )
    assert out.startswith("Edited a.txt: replaced 3 occurrences.")
    assert (root / "a.txt").read_text() == "y = 2\ny = 2\ny = 2\n"


async def test_edit_needs_a_read_first(root: Path, state: SessionState) -> None:
    (root / "a.txt").write_text("hello\n")
    with pytest.raises(ToolError, match="has not been read in this session"):
        await run(
            EditTool(root),
            {"path": "a.txt", "old_string": "hello", "new_string": "bye"},
            state,
        )
    assert (root / "a.txt").read_text() == "hello\n"


async def test_edit_of_a_file_changed_on_disk_asks_for_a_reread(
    root: Path, state: SessionState
) -> None:
    path = root / "a.txt"
    path.write_text("hello\n")
    await _read(root, "a.txt", state)
    _touch_later(path, "hello world\n")
    edit = EditTool(root)
    raw = {"path": "a.txt", "old_string": "hello", "new_string": "bye"}
    with pytest.raises(ToolError, match="changed on disk since you last read it"):
        await run(edit, raw, state)
    assert path.read_text() == "hello world\n"
    reread = await _read(root, "a.txt", state)
    assert "changed on disk" in reread  # the stale-read hint
    await run(edit, raw, state)
    assert path.read_text() == "bye world\n"


async def test_a_second_edit_needs_no_reread_and_a_read_sees_the_change(
    root: Path, state: SessionState
) -> None:
    (root / "a.txt").write_text("one two three\n")
    await _read(root, "a.txt", state)
    edit = EditTool(root)
    await run(edit, {"path": "a.txt", "old_string": "one", "new_string": "1"}, state)
    await run(edit, {"path": "a.txt", "old_string": "two", "new_string": "2"}, state)
    assert (root / "a.txt").read_text() == "1 2 three\n"
    # the write is known, but was never shown: a read returns the content
    assert await _read(root, "a.txt", state) == "     1\t1 2 three"


async def test_edit_errors(root: Path, state: SessionState) -> None:
    (root / "a.txt").write_text("abc\n")
    (root / "blob").write_bytes(b"ab\x00cd")
    (root / "latin1.txt").write_bytes(b"caf\xe9\n")
    (root / "d").mkdir()
    await _read(root, "a.txt", state)
    await _read(root, "latin1.txt", state)
    state.read_files.record(root / "blob", mtime_ns=(root / "blob").stat().st_mtime_ns,
                            size=5, span=(1, None))  # fmt: skip
    edit = EditTool(root)
    with pytest.raises(ToolError, match=r"old_string was not found in a\.txt"):
        await run(
            edit, {"path": "a.txt", "old_string": "xyz", "new_string": "q"}, state
        )
    with pytest.raises(ToolInputError, match="the same"):
        await run(
            edit, {"path": "a.txt", "old_string": "abc", "new_string": "abc"}, state
        )
    with pytest.raises(ToolError, match=r"File not found: nope\.txt\. Use write"):
        await run(
            edit, {"path": "nope.txt", "old_string": "a", "new_string": "b"}, state
        )
    with pytest.raises(ToolError, match="binary file"):
        await run(edit, {"path": "blob", "old_string": "ab", "new_string": "x"}, state)
    with pytest.raises(ToolError, match="not valid UTF-8"):
        await run(
            edit, {"path": "latin1.txt", "old_string": "caf", "new_string": "x"}, state
        )
    with pytest.raises(ToolInputError, match="is a directory"):
        await run(edit, {"path": "d", "old_string": "a", "new_string": "b"}, state)
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await run(edit, {"path": "pipe", "old_string": "a", "new_string": "b"}, state)
    with pytest.raises(ToolInputError):
        edit.parse({"path": "a.txt", "old_string": "", "new_string": "x"})
    assert (root / "a.txt").read_text() == "abc\n"


async def test_edit_keeps_mode_and_goes_through_links_inside(
    root: Path, state: SessionState
) -> None:
    script = root / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    (root / "alias.sh").symlink_to(script)
    await _read(root, "alias.sh", state)
    await run(
        EditTool(root),
        {"path": "alias.sh", "old_string": "hi", "new_string": "yo"},
        state,
    )
    assert script.read_text() == "echo yo\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert (root / "alias.sh").is_symlink()
    assert sorted(os.listdir(root)) == [
        "alias.sh",
        "run.sh",
    ]  # no temp left


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "out.txt", "outdir/secret.txt", "/tmp/x.txt"]
)
async def test_escapes_never_touch_outside(
    root: Path, outside: Path, state: SessionState, path: str
) -> None:
    (root / "out.txt").symlink_to(outside / "secret.txt")
    (root / "outdir").symlink_to(outside)
    with pytest.raises(WorkspaceEscapeError):
        await run(
            EditTool(root),
            {"path": path, "old_string": "TOP", "new_string": "x"},
            state,
        )
    with pytest.raises(WorkspaceEscapeError):
        await run(WriteTool(root), {"path": path, "content": "pwned"}, state)
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_write_through_a_dangling_link_out_is_refused(
    root: Path, outside: Path, state: SessionState
) -> None:
    (root / "new.txt").symlink_to(outside / "created.txt")
    with pytest.raises(WorkspaceEscapeError):
        await run(WriteTool(root), {"path": "new.txt", "content": "x"}, state)
    assert not (outside / "created.txt").exists()


async def test_write_creates_new_files_without_a_read(
    root: Path, state: SessionState
) -> None:
    out = await run(
        WriteTool(root), {"path": "pkg/sub/new.py", "content": "x = 1\n"}, state
    )
    assert out == "Created pkg/sub/new.py (6 bytes)."
    assert (root / "pkg/sub/new.py").read_text() == "x = 1\n"
    # the session knows what it wrote: an edit follows without a read
    await run(
        EditTool(root),
        {"path": "pkg/sub/new.py", "old_string": "1", "new_string": "2"},
        state,
    )
    assert (root / "pkg/sub/new.py").read_text() == "x = 2\n"


async def test_write_over_an_existing_file_needs_a_fresh_read(
    root: Path, state: SessionState
) -> None:
    path = root / "a.txt"
    path.write_text("old\n")
    write = WriteTool(root)
    with pytest.raises(ToolError, match="has not been read"):
        await run(write, {"path": "a.txt", "content": "new\n"}, state)
    await _read(root, "a.txt", state)
    _touch_later(path, "changed\n")
    with pytest.raises(ToolError, match="changed on disk"):
        await run(write, {"path": "a.txt", "content": "new\n"}, state)
    assert path.read_text() == "changed\n"
    await _read(root, "a.txt", state)
    assert (
        await run(write, {"path": "a.txt", "content": "new\n"}, state)
        == "Overwrote a.txt (4 bytes)."
    )
    assert path.read_text() == "new\n"
    (root / "d").mkdir()
    with pytest.raises(ToolInputError, match="is a directory"):
        await run(write, {"path": "d", "content": ""}, state)


def test_declarations(root: Path) -> None:
    (root / "real.txt").write_text("")
    (root / "alias.txt").symlink_to(root / "real.txt")
    for tool in (EditTool(root), WriteTool(root)):
        assert tool.interrupt is Interrupt.BLOCK
        raw: dict[str, object] = {"path": "alias.txt"}
        raw |= (
            {"content": ""}
            if tool.name == "write"
            else {"old_string": "a", "new_string": "b"}
        )
        args = tool.parse(raw)
        assert tool.concurrency_for(args) is Concurrency.SEQUENTIAL
        assert tool.access_for(args) == Access(writes=(f"fs:{root}/real.txt",))
        escaping = tool.parse(raw | {"path": "../x"})
        assert tool.access_for(escaping) == Access.barrier()
    assert [EditTool(root).name, WriteTool(root).name] == ["edit", "write"]
    # a write that must create directories declares the topmost one it creates
    deep = WriteTool(root).parse({"path": "pkg/sub/new.py", "content": ""})
    assert WriteTool(root).access_for(deep) == Access(writes=(f"fs:{root}/pkg",))
