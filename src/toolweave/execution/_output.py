"""Mapping whatever a tool returned to the content of its ToolResult."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import pydantic_core

from .._utf8 import utf8_text
from ..messages import ContentBlock, Image, Text, ToolResult

__all__ = [
    "Content",
    "ToolOutput",
    "content_size",
    "content_text",
    "empty_placeholder",
    "is_empty",
    "to_content",
    "utf8_safe",
    "utf8_text",
]


Content: TypeAlias = str | Sequence[ContentBlock]
"""What a ToolResult holds: text, or text and image blocks."""


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """Returned by a tool instead of plain content to also change shared context.

    Example::

        async def enable_tools(ctx: ToolContext) -> ToolOutput:
            return ToolOutput("enabled", context_modifier=lambda: registry.register(x))

    The runner maps `content` like any other output and copies the modifier into
    `ToolResult.context_modifier`; the Dispatcher applies it (after a concurrent
    batch in call order, at once on the sequential path).
    """

    content: object
    """The output, mapped exactly as if the tool had returned it directly."""
    context_modifier: Callable[[], object] | None = field(default=None, kw_only=True)
    """A zero-argument callable that changes shared context; None = no change."""


def empty_placeholder(tool_name: str) -> str:
    """The text that stands in for an empty result (as in Claude Code)."""
    return f"({tool_name} completed with no output)"


def _block(item: object) -> ContentBlock | None:
    """`item` as a content block, or None if it is not one (duck-typed for MCP)."""
    if isinstance(item, Text | Image):
        return item
    kind = getattr(item, "type", None)
    if kind == "text" and isinstance(getattr(item, "text", None), str):
        return Text(getattr(item, "text"))  # noqa: B009 - duck-typed block
    if kind == "image" and isinstance(getattr(item, "data", None), str):
        media = getattr(item, "mime_type", None) or getattr(item, "mimeType", None)
        return Image(getattr(item, "data"), media or "image/png")  # noqa: B009
    return None


def _blocks(
    items: list[object] | tuple[object, ...],
) -> tuple[ContentBlock, ...] | None:
    """A list of blocks (and strings) as blocks; None if any item is neither."""
    if not any(isinstance(i, Text | Image) or hasattr(i, "type") for i in items):
        return None
    out: list[ContentBlock] = []
    for item in items:
        block = Text(item) if isinstance(item, str) else _block(item)
        if block is None:
            return None
        out.append(block)
    return tuple(out)


def _json_text(value: object) -> str:
    try:
        return pydantic_core.to_json(_plain(value)).decode()
    except (pydantic_core.PydanticSerializationError, TypeError, ValueError):
        return str(value)


def _plain(value: object) -> object:
    """`value` with each `Text` as ``{"text": ...}``: its provider item id is wire detail."""
    if isinstance(value, Text):
        return {"text": value.text}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def to_content(output: object) -> tuple[Content, bool]:
    """Map raw tool output to result content; returns ``(content, is_error)``.

    Rules: str as is; bytes decoded as UTF-8 with replacement (never raises);
    `Text`/`Image` (or MCP-style ``type="text"|"image"`` objects) and lists of
    them as blocks; a `ToolResult`, or any object with ``content`` and a bool
    ``is_error``/``isError`` (an MCP ``CallToolResult``), by its content and
    flag; None as empty; anything else JSON-encoded, or ``str()`` if it is not
    JSON-able. Never raises.
    """
    if isinstance(output, str):
        return output, False
    if output is None:
        return "", False
    if isinstance(output, bytes | bytearray | memoryview):
        return bytes(output).decode("utf-8", errors="replace"), False
    if isinstance(output, ToolResult):
        return output.content, output.is_error
    block = _block(output)
    if block is not None:
        return (block,), False
    if isinstance(output, list | tuple):
        blocks = _blocks(output)
        if blocks is not None:
            return blocks, False
    elif hasattr(output, "content"):
        flag = getattr(output, "is_error", getattr(output, "isError", None))
        if isinstance(flag, bool):
            content, _ = to_content(getattr(output, "content"))  # noqa: B009
            return content, flag
    return _json_text(output), False


def utf8_safe(result: ToolResult) -> ToolResult:
    """`result` with text that encodes as UTF-8 (`result` itself when it already does).

    Sync tools often return text decoded with ``surrogateescape`` (``os.listdir``,
    ``os.fsdecode``, subprocess output), and exception messages quote such file
    names. A lone surrogate cannot be encoded as UTF-8: the session store and
    every provider request (JSON sent as UTF-8) would fail on it for the rest of
    the session. Each lone surrogate becomes U+FFFD, as undecodable bytes do.
    """
    content = result.content
    fixed: Content
    if isinstance(content, str):
        if content.isascii():  # the common case, without a call
            return result
        fixed = utf8_text(content)
        changed = fixed is not content
    else:
        fixed = tuple(
            Text(utf8_text(b.text)) if isinstance(b, Text) else b for b in content
        )
        changed = fixed != tuple(content)
    if not changed:
        return result
    return dataclasses.replace(result, content=fixed)


def content_text(content: Content) -> str | None:
    """The content as one string, or None if it holds an image."""
    if isinstance(content, str):
        return content
    if any(isinstance(b, Image) for b in content):
        return None
    return "\n".join(b.text for b in content if isinstance(b, Text))


def content_size(content: Content) -> int:
    """Characters of text in `content` (images count as nothing)."""
    if isinstance(content, str):
        return len(content)
    return sum(len(b.text) for b in content if isinstance(b, Text))


def is_empty(content: Content) -> bool:
    """True if `content` shows the model nothing but whitespace."""
    if isinstance(content, str):
        return not content.strip()
    return all(isinstance(b, Text) and not b.text.strip() for b in content)
