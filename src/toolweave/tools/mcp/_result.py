"""Turning an MCP CallToolResult into toolweave result content."""

from __future__ import annotations

import json
from typing import TypeAlias

import mcp.types as mt

from ...messages import ContentBlock, Image, Text

__all__ = ["MCPContent", "map_call_result"]

MCPContent: TypeAlias = str | tuple[ContentBlock, ...]
"""Plain text, or text and image blocks when the server returned images."""


def _resource_text(block: mt.EmbeddedResource) -> str:
    resource = block.resource
    if isinstance(resource, mt.TextResourceContents):
        return f"[resource {resource.uri}]\n{resource.text}"
    mime = resource.mime_type or "application/octet-stream"
    return f"[resource {resource.uri} ({mime}, {len(resource.blob)} base64 chars)]"


def _block(block: mt.ContentBlock) -> ContentBlock:
    """One MCP content block as a toolweave block; what has no equivalent is described."""
    if isinstance(block, mt.TextContent):
        return Text(block.text)
    if isinstance(block, mt.ImageContent):
        return Image(block.data, block.mime_type)
    if isinstance(block, mt.AudioContent):
        return Text(f"[audio {block.mime_type}, {len(block.data)} base64 chars]")
    if isinstance(block, mt.EmbeddedResource):
        return Text(_resource_text(block))
    return Text(
        f"[resource link {block.uri}" + (f": {block.name}]" if block.name else "]")
    )


def map_call_result(result: mt.CallToolResult) -> tuple[bool, MCPContent]:
    """``(is_error, content)`` for one CallToolResult.

    Text blocks are joined into a string unless the result also holds images;
    then the content is a tuple of blocks in the server's order. Audio, embedded
    resources and resource links become descriptive text. Structured content is
    used as JSON text only when the result carries no text of its own (servers
    usually mirror it as text). Never raises.
    """
    blocks = [_block(b) for b in result.content]
    if result.structured_content is not None and not any(
        isinstance(b, Text) for b in blocks
    ):
        blocks.append(Text(json.dumps(result.structured_content, ensure_ascii=False)))
    if any(isinstance(b, Image) for b in blocks):
        return result.is_error, tuple(blocks)
    return result.is_error, "\n".join(b.text for b in blocks if isinstance(b, Text))
