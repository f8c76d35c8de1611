from __future__ import annotations

from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import ToolError, ToolInputError, WorkspaceEscapeError
from toolweave.tools import Access, Concurrency, Interrupt, SessionState
from toolweave.tools.builtin import GlobTool

pytestmark = pytest.mark.anyio


def _tree(root: Path) -> None:
    for rel in ("a.py", "README.md", "src/b.py", "src/pkg/c.py", "src/pkg/d.ts",
                "src/pkg/e.tsx", ".hidden/h.py", ".git/objects/x.py"):  # fmt: skip
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)


async def test_patterns(root: Path, state: SessionState) -> None:
    _tree(root)
    tool = GlobTool(root)

    async def glob(pattern: str, path: str = ".") -> list[str]:
        out: str = await run(tool, {"pattern": pattern, "path": path}, state)
        return out.splitlines()

    # a pattern without '/' matches names at any depth; .git is never walked
    assert await glob("*.py") == [".hidden/h.py", "a.py", "src/b.py", "src/pkg/c.py"]
    assert await glob("src/*.py") == ["src/b.py"]
    assert await glob("src/**/*.py") == ["src/b.py", "src/pkg/c.py"]
    assert await glob("**/pkg/*.{ts,tsx}") == ["src/pkg/d.ts", "src/pkg/e.tsx"]
    assert await glob("?.py") == [".hidden/h.py", "a.py", "src/b.py", "src/pkg/c.py"]
    assert await glob("[ab].py") == ["a.py", "src/b.py"]
    assert await glob("*.py", "src/pkg") == ["src/pkg/c.py"]
    assert await glob("*.rs") == ["No files match '*.rs' under ."]


async def test_links_out_are_not_listed_or_followed(
    root: Path, outside: Path, state: SessionState
) -> None:
    (root / "in.txt").write_text("")
    (root / "out.txt").symlink_to(outside / "secret.txt")
    (root / "alias.txt").symlink_to(root / "in.txt")
    (root / "outdir").symlink_to(outside)
    out = await run(GlobTool(root), {"pattern": "**"}, state)
    assert out.splitlines() == ["alias.txt", "in.txt"]


async def test_many_matches_are_counted(root: Path, state: SessionState) -> None:
    for i in range(230):
        (root / f"f{i:03}.txt").write_text("")
    lines = (await run(GlobTool(root), {"pattern": "*.txt"}, state)).splitlines()
    assert len(lines) == 201
    assert lines[0] == "f000.txt"
    assert lines[-1] == "[30 more matches not shown; narrow the pattern or the path]"


async def test_bad_inputs(root: Path, outside: Path, state: SessionState) -> None:
    (root / "file").write_text("")
    tool = GlobTool(root)
    with pytest.raises(ToolInputError, match="must be relative"):
        await run(tool, {"pattern": "../outside/*"}, state)
    with pytest.raises(ToolInputError, match="must be relative"):
        await run(tool, {"pattern": "/etc/*"}, state)
    with pytest.raises(WorkspaceEscapeError):
        await run(tool, {"pattern": "*", "path": str(outside)}, state)
    with pytest.raises(ToolError, match="does not exist"):
        await run(tool, {"pattern": "*", "path": "nope"}, state)
    with pytest.raises(ToolError, match="not a directory"):
        await run(tool, {"pattern": "*", "path": "file"}, state)
    with pytest.raises(ToolInputError):
        tool.parse({"pattern": ""})


def test_declaration(root: Path) -> None:
    (root / "src").mkdir()
    tool = GlobTool(root)
    assert tool.name == "glob"
    assert tool.interrupt is Interrupt.CANCEL
    default = tool.parse({"pattern": "*.py"})
    assert tool.concurrency_for(default) is Concurrency.SAFE
    assert tool.access_for(default) == Access(reads=(f"fs:{root}",))
    assert tool.access_for(tool.parse({"pattern": "*", "path": "src"})) == Access(
        reads=(f"fs:{root}/src",)
    )
    assert (
        tool.access_for(tool.parse({"pattern": "*", "path": ".."})) == Access.barrier()
    )
