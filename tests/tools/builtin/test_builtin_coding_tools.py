from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from toolweave.tools import Tool, ToolRegistry
from toolweave.tools.builtin import (
    BashTool,
    EditTool,
    GlobTool,
    GrepTool,
    ReadTool,
    TodoReadTool,
    TodoWriteTool,
    WebFetchTool,
    WriteTool,
    coding_tools,
)

NAMES = [
    "read",
    "glob",
    "grep",
    "edit",
    "write",
    "bash",
    "web_fetch",
    "todo_write",
    "todo_read",
]


def test_names_types_and_root(root: Path) -> None:
    tools = coding_tools(root)
    assert [t.name for t in tools] == NAMES
    kinds = [ReadTool, GlobTool, GrepTool, EditTool, WriteTool, BashTool, WebFetchTool,
             TodoWriteTool, TodoReadTool]  # fmt: skip
    assert [type(t) for t in tools] == kinds
    for tool in tools:
        workspace = getattr(tool, "workspace", None)
        assert workspace is None or workspace.root == root
    registry = ToolRegistry(tools)
    assert registry.names == NAMES


@pytest.mark.parametrize("index", range(len(NAMES)))
def test_specs_are_valid_json_schema_objects(root: Path, index: int) -> None:
    tool: Tool = coding_tools(root)[index]
    spec = tool.anthropic_spec()
    assert spec["name"] == NAMES[index]
    assert spec["description"]
    assert spec["input_schema"]["type"] == "object"
    assert tool.openai_spec()["function"]["parameters"] == spec["input_schema"]


def test_permission_subjects(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(root / "real.txt")
    tools = {t.name: t for t in coding_tools(root)}
    read = tools["read"]
    assert read.permission_subject(read.parse({"path": "link"})) == root / "real.txt"
    escaping = read.permission_subject(read.parse({"path": "../outside/secret.txt"}))
    assert escaping == PurePath(outside / "secret.txt")
    bash = tools["bash"]
    assert bash.permission_subject(bash.parse({"command": "git log"})) == "git log"
    fetch = tools["web_fetch"]
    assert (
        fetch.permission_subject(fetch.parse({"url": "https://x.org"}))
        == "https://x.org"
    )
    assert tools["todo_read"].permission_subject({}) is None


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        coding_tools(tmp_path / "missing")


def test_every_read_only_tool_passes_the_parallel_gate(tmp_path: Path) -> None:
    from toolweave.messages import ToolCall
    from toolweave.scheduling import classify
    from toolweave.tools import ToolRegistry

    registry = ToolRegistry(coding_tools(tmp_path))
    for name, args in [
        ("read", {"path": "a.py"}),
        ("glob", {"pattern": "*.py"}),
        ("grep", {"pattern": "x"}),
        ("bash", {"command": "ls"}),
        ("web_fetch", {"url": "http://127.0.0.1/"}),
        ("todo_read", {}),
    ]:
        plan = classify(ToolCall("c", name, args), registry)
        assert plan.parallel_ok, (name, plan.reason)
