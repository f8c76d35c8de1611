"""The built-in tools do only what they declare: each runs under the audit in enforce mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolweave.testing import check_declarations_async
from toolweave.tools import SessionState, Tool, coding_tools
from toolweave.tools.builtin import GrepTool

pytestmark = pytest.mark.anyio


def _by_name(root: Path) -> dict[str, Tool]:
    return {t.name: t for t in coding_tools(root)}


CASES: list[tuple[str, dict[str, Any]]] = [
    ("read", {"path": "a.py"}),
    ("glob", {"pattern": "**/*.py"}),
    ("grep", {"pattern": "def", "path": "."}),
    ("bash", {"command": "ls && cat a.py"}),  # read-only: SAFE, proc:bash
    ("bash", {"command": "echo hi > made.txt"}),  # not read-only: a barrier
    ("write", {"path": "pkg/sub/new.py", "content": "x = 1\n"}),  # new directories
    ("write", {"path": "b.py", "content": "y = 2\n"}),
    ("edit", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"}),
    ("todo_write", {"todos": [{"content": "x", "status": "pending"}]}),
    ("todo_read", {}),
]


async def test_every_built_in_tool_keeps_to_its_declaration(root: Path) -> None:
    (root / "a.py").write_text("def a():\n    return 'a'\n")
    tools = _by_name(root)
    state = SessionState(workspace=root)
    found = await check_declarations_async(
        tools["read"], [{"path": "a.py"}], state=state
    )
    for name, args in CASES:
        found += await check_declarations_async(tools[name], [args], state=state)
    assert found == []
    assert (root / "pkg/sub/new.py").read_text() == "x = 1\n"
    assert (root / "a.py").read_text() == "def a():\n    return 'A'\n"
    python_grep = GrepTool(root, ripgrep=False)
    assert await check_declarations_async(python_grep, [{"pattern": "def"}]) == []
