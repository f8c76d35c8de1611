"""What real servers' tools declare: names, schemas, concurrency, access, interrupt."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import fs_config, git_config, time_config

import toolweave as tw
from toolweave.tools.mcp import MCPTool, open_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]

# FINDINGS part 2: the annotations the reference servers publish.
GIT_READ_ONLY = {
    "git_status",
    "git_diff_unstaged",
    "git_diff_staged",
    "git_diff",
    "git_log",
    "git_show",
    "git_branch",
}
GIT_MUTATING = {
    "git_commit",
    "git_add",
    "git_reset",
    "git_create_branch",
    "git_checkout",
}
FS_READ_ONLY = {
    "read_file",
    "read_text_file",
    "read_media_file",
    "read_multiple_files",
    "list_directory",
    "list_directory_with_sizes",
    "directory_tree",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
}
FS_MUTATING = {"write_file", "edit_file", "move_file", "create_directory"}


def _by_server(tools: tuple[MCPTool, ...], server: str) -> dict[str, MCPTool]:
    return {t.remote_name: t for t in tools if t.server.name == server}


def _check_read_only(tool: MCPTool, access: tw.Access) -> None:
    assert tool.concurrency is tw.Concurrency.SAFE, tool
    assert tool.access_for({}) == access, tool
    assert tool.bound_access() == access, tool  # what a sub-agent holding it claims
    assert tool.interrupt is tw.Interrupt.CANCEL, tool


def _check_mutating(
    tool: MCPTool, concurrency: tw.Concurrency, access: tw.Access
) -> None:
    assert tool.concurrency is concurrency, tool
    assert tool.access_for({}) == access, tool
    assert tool.bound_access() == access, tool
    assert tool.interrupt is tw.Interrupt.BLOCK, tool


async def test_real_servers_tools_declare_what_their_annotations_and_config_allow(
    git_repo: Path, fs_server_js: Path, tmp_path: Path
) -> None:
    configs = [
        git_config(git_repo),
        fs_config(fs_server_js, git_repo),
        time_config(touches=()),
        git_config(
            git_repo, name="trusted-git", trusted=True, touches=(f"fs:{git_repo}",)
        ),
    ]
    async with open_mcp_servers(configs) as toolset:
        git = _by_server(toolset.tools, "git")
        fs = _by_server(toolset.tools, "fs")
        time = _by_server(toolset.tools, "time")
        trusted = _by_server(toolset.tools, "trusted-git")
        assert not toolset.skipped

    assert set(git) == GIT_READ_ONLY | GIT_MUTATING
    assert set(fs) == FS_READ_ONLY | FS_MUTATING
    assert set(time) == {"get_current_time", "convert_time"}
    assert git["git_status"].name == "mcp__git__git_status"
    # Untrusted, no `touches`: read-only tools read everything, the rest are barriers.
    for name in GIT_READ_ONLY:
        _check_read_only(git[name], tw.Access.read_all())
    for name in FS_READ_ONLY:
        _check_read_only(fs[name], tw.Access.read_all())
    for name in GIT_MUTATING:
        _check_mutating(git[name], tw.Concurrency.SEQUENTIAL, tw.Access.barrier())
    for name in FS_MUTATING:
        _check_mutating(fs[name], tw.Concurrency.SEQUENTIAL, tw.Access.barrier())
    # `touches=()`: the server's own state only.
    for tool in time.values():
        _check_read_only(tool, tw.Access(reads=["mcp:time"]))
    # Trusted: everything SAFE; with `touches`, mutating tools still write honestly.
    keys = ["mcp:trusted-git", f"fs:{git_repo}"]
    for name in GIT_READ_ONLY:
        _check_read_only(trusted[name], tw.Access(reads=keys))
    for name in GIT_MUTATING:
        _check_mutating(trusted[name], tw.Concurrency.SAFE, tw.Access(writes=keys))
    assert git["git_reset"].annotations is not None
    assert git["git_reset"].annotations.destructive_hint is True


async def test_the_servers_input_schema_is_passed_through_and_enforced() -> None:
    async with open_mcp_servers([time_config()]) as toolset:
        tool = {t.remote_name: t for t in toolset.tools}["convert_time"]
        listed = {t.name: t for t in toolset.server("time").listed_tools}[
            "convert_time"
        ]
        assert tool.input_schema() == listed.input_schema
        assert tool.anthropic_spec()["input_schema"] == listed.input_schema
        assert tool.description == listed.description
        good = {
            "source_timezone": "UTC",
            "time": "12:00",
            "target_timezone": "Asia/Tokyo",
        }
        assert tool.parse(good) == good
        with pytest.raises(tw.ToolInputError) as info:
            tool.parse({"source_timezone": 5, "time": "12:00"})
        message = str(info.value)
        assert "'target_timezone' is a required property" in message
        assert "source_timezone: 5 is not of type 'string'" in message
        # The pydantic input model enforces the same schema for code that uses it.
        with pytest.raises(ValueError, match="required property"):
            tool.input_model.model_validate({"time": "12:00"})
        # A protocol-level error (this server raises one for an unknown tool).
        with pytest.raises(tw.ToolError, match="returned an error: Unknown tool: nope"):
            await toolset.server("time").call_tool("nope", {})
