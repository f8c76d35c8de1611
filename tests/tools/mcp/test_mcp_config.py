"""MCPServerConfig validation, tool naming, annotation reading, result mapping."""

from __future__ import annotations

import mcp.types as mt
import pytest

import toolweave as tw
from toolweave.tools.mcp import (
    MCPServerConfig,
    is_read_only,
    map_call_result,
    mcp_tool_name,
    open_mcp_servers,
)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": "x"}, "needs command"),
        ({"name": "x", "command": "s", "url": "http://h/mcp"}, "url do not apply"),
        ({"name": "x", "transport": "http"}, "needs an http(s) url"),
        ({"name": "x", "transport": "http", "url": "ftp://h"}, "needs an http(s) url"),
        (
            {"name": "x", "transport": "http", "url": "http://h", "command": "s"},
            "command do not apply",
        ),
        (
            {"name": "x", "transport": "sse", "command": "s"},
            "must be 'stdio' or 'http'",
        ),
        ({"name": "a__b", "command": "s"}, "single '_'"),
        ({"name": "a b", "command": "s"}, "letters, digits"),
        ({"name": "", "command": "s"}, "letters, digits"),
        ({"name": "x", "command": "s", "timeout": 0}, "timeout must be positive"),
        ({"name": "x", "command": "s", "startup_timeout": -1}, "startup_timeout"),
    ],
)
def test_invalid_configs_are_refused_with_a_clear_message(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(tw.ConfigError, match="MCP server") as info:
        MCPServerConfig(**options)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_config_is_frozen_and_copies_its_mappings() -> None:
    env = {"A": "1"}
    config = MCPServerConfig(name="x", command="s", env=env, touches=["fs:/r"])  # type: ignore[arg-type]
    env["A"] = "2"
    assert config.env == {"A": "1"}
    assert config.touches == ("fs:/r",)
    with pytest.raises(TypeError):
        config.env["B"] = "3"  # type: ignore[index]


@pytest.mark.anyio
async def test_two_servers_with_one_name_are_refused_before_anything_starts() -> None:
    configs = [MCPServerConfig(name="x", command="/nonexistent")] * 2
    with pytest.raises(tw.ConfigError, match="two MCP servers are named 'x'"):
        async with open_mcp_servers(configs):
            pass


def test_tool_names_are_prefixed_and_made_provider_safe() -> None:
    assert mcp_tool_name("git", "git_status") == "mcp__git__git_status"
    assert mcp_tool_name("my-srv", "files.read/all") == "mcp__my-srv__files_read_all"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, False),
        (mt.ToolAnnotations(), False),
        (mt.ToolAnnotations(read_only_hint=True), True),
        (mt.ToolAnnotations(read_only_hint=True, destructive_hint=False), True),
        (mt.ToolAnnotations(read_only_hint=True, destructive_hint=True), False),
        (mt.ToolAnnotations(read_only_hint=False, destructive_hint=False), False),
        (mt.ToolAnnotations(destructive_hint=False, idempotent_hint=True), False),
    ],
)
def test_only_a_read_only_and_not_destructive_annotation_counts_as_read_only(
    annotations: mt.ToolAnnotations | None, expected: bool
) -> None:
    assert is_read_only(annotations) is expected


def test_results_map_text_images_resources_and_structured_content() -> None:
    text = mt.TextContent(text="hello")
    image = mt.ImageContent(data="AAAA", mime_type="image/png")
    assert map_call_result(mt.CallToolResult(content=[text, text])) == (
        False,
        "hello\nhello",
    )
    assert map_call_result(mt.CallToolResult(content=[text, image], is_error=True)) == (
        True,
        (tw.Text("hello"), tw.Image("AAAA", "image/png")),
    )
    structured = mt.CallToolResult(content=[], structured_content={"n": 1})
    assert map_call_result(structured) == (False, '{"n": 1}')
    mirrored = mt.CallToolResult(content=[text], structured_content={"n": 1})
    assert map_call_result(mirrored) == (False, "hello")
    resource = mt.EmbeddedResource(
        resource=mt.TextResourceContents(uri="file:///a.txt", text="body")
    )
    audio = mt.AudioContent(data="QUJD", mime_type="audio/wav")
    link = mt.ResourceLink(uri="file:///b.txt", name="b")
    _, content = map_call_result(mt.CallToolResult(content=[resource, audio, link]))
    assert content == (
        "[resource file:///a.txt]\nbody\n[audio audio/wav, 4 base64 chars]\n"
        "[resource link file:///b.txt: b]"
    )
