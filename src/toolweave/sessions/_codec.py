"""JSON for transcripts and events: what the store writes and `toolweave run --json` prints.

The encoding is plain JSON (no pickles), stable, and round-trips every block of
`toolweave.messages`, provider item ids included (a resumed session sends the
ids the provider gave; optional fields are written only when set, and rows
written before a field existed read back with its default). Large tool-result
contents may be moved out of the JSON into a `BlobSink` (the store keeps them
as files) and are read back through it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .._exceptions import StoreError
from .._utf8 import is_utf8_encodable, utf8_text
from ..events import Event, FileRead
from ..messages import (
    Image,
    Message,
    ModelResponse,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = [
    "BlobSink",
    "block_from_json",
    "block_to_json",
    "dumps",
    "event_to_json",
    "message_from_json",
    "message_to_json",
    "response_to_json",
    "result_from_json",
    "result_to_json",
    "usage_from_json",
    "usage_to_json",
]

Json = dict[str, Any]


class BlobSink(Protocol):
    """Where large tool-result contents go instead of the JSON row."""

    threshold: int
    """Contents whose JSON is longer than this many characters are stored as blobs."""

    def put(self, data: str) -> str:
        """Store `data`; return a reference to it."""
        ...

    def get(self, ref: str) -> str:
        """The data stored under `ref` (raises StoreError if it is missing)."""
        ...


def dumps(value: object) -> str:
    r"""Compact JSON; anything not JSON-native is written as its ``repr``.

    Always storable UTF-8: text holding a lone surrogate (a model's ``"\ud800"``
    escape, a non-UTF-8 byte decoded with surrogateescape) is written with
    ASCII escapes instead, which `json.loads` reads back to the same string.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    if is_utf8_encodable(text):
        return text
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=repr)


storable_text = utf8_text
"""`text` with each lone surrogate replaced by U+FFFD, so SQLite can store it."""


def usage_to_json(usage: Usage) -> Json:
    """A Usage as a JSON object."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "requests": usage.requests,
    }


def usage_from_json(data: Mapping[str, Any] | None) -> Usage:
    """The inverse of `usage_to_json` (missing fields count as zero)."""
    data = data or {}
    return Usage(
        int(data.get("input_tokens", 0)),
        int(data.get("output_tokens", 0)),
        cache_read_tokens=int(data.get("cache_read_tokens", 0)),
        cache_write_tokens=int(data.get("cache_write_tokens", 0)),
        requests=int(data.get("requests", 0)),
    )


def _content_to_json(content: str | Sequence[Text | Image]) -> str | list[Json]:
    if isinstance(content, str):
        return content
    return [block_to_json(b) for b in content]


def result_to_json(result: ToolResult, *, blobs: BlobSink | None = None) -> Json:
    """A ToolResult as JSON; a large content goes to `blobs` when one is given."""
    out: Json = {"type": "tool_result", "call_id": result.call_id}
    content = _content_to_json(result.content)
    encoded = dumps(content) if blobs is not None else ""
    if blobs is not None and len(encoded) > blobs.threshold:
        out["content_ref"] = blobs.put(encoded)
    else:
        out["content"] = content
    out["is_error"] = result.is_error
    out["synthetic"] = result.synthetic
    return out


def result_from_json(
    data: Mapping[str, Any], *, blobs: BlobSink | None = None
) -> ToolResult:
    """The inverse of `result_to_json`.

    Raises:
        StoreError: if the content is a blob reference and no `blobs` is given.
    """
    if "content_ref" in data:
        if blobs is None:
            raise StoreError(f"tool result {data.get('call_id')!r} is stored as a blob")
        raw: Any = json.loads(blobs.get(str(data["content_ref"])))
    else:
        raw = data.get("content", "")
    content: str | tuple[Text | Image, ...] = (
        raw if isinstance(raw, str) else tuple(_content_block(b) for b in raw)
    )
    return ToolResult(
        str(data["call_id"]),
        content,
        is_error=bool(data.get("is_error", False)),
        synthetic=bool(data.get("synthetic", False)),
    )


def _content_block(data: Mapping[str, Any]) -> Text | Image:
    block = block_from_json(data)
    if not isinstance(block, Text | Image):
        raise StoreError(f"a tool result holds a {data.get('type')!r} block")
    return block


def block_to_json(
    block: Text | Thinking | Image | ToolCall | ToolResult,
    *,
    blobs: BlobSink | None = None,
) -> Json:
    """One content block as a JSON object with a ``type`` tag."""
    if isinstance(block, Text):
        text: Json = {"type": "text", "text": block.text}
        if block.provider_id is not None:
            text["provider_id"] = block.provider_id
        return text
    if isinstance(block, Image):
        return {"type": "image", "data": block.data, "media_type": block.media_type}
    if isinstance(block, ToolCall):
        out: Json = {"type": "tool_call", "id": block.id, "name": block.name}
        out["input"] = dict(block.input)
        if block.raw_arguments is not None:
            out["raw_arguments"] = block.raw_arguments
        if block.key:
            out["key"] = block.key
        if block.provider_id is not None:
            out["provider_id"] = block.provider_id
        return out
    if isinstance(block, ToolResult):
        return result_to_json(block, blobs=blobs)
    fields = {
        "signature": block.signature,
        "redacted_data": block.redacted_data,
        "provider_id": block.provider_id,
        "encrypted_content": block.encrypted_content,
    }
    thinking: Json = {"type": "thinking", "text": block.text}
    thinking.update({k: v for k, v in fields.items() if v is not None})
    return thinking


def block_from_json(
    data: Mapping[str, Any], *, blobs: BlobSink | None = None
) -> Text | Thinking | Image | ToolCall | ToolResult:
    """The inverse of `block_to_json`.

    Raises:
        StoreError: for an unknown block type.
    """
    kind = data.get("type")
    if kind == "text":
        return Text(str(data["text"]), provider_id=_optional_str(data, "provider_id"))
    if kind == "image":
        return Image(str(data["data"]), str(data.get("media_type", "image/png")))
    if kind == "tool_call":
        return ToolCall(
            str(data["id"]),
            str(data["name"]),
            dict(data.get("input") or {}),
            raw_arguments=data.get("raw_arguments"),
            key=str(data.get("key", "")),
            provider_id=_optional_str(data, "provider_id"),
        )
    if kind == "tool_result":
        return result_from_json(data, blobs=blobs)
    if kind == "thinking":
        return Thinking(
            str(data.get("text", "")),
            data.get("signature"),
            redacted_data=data.get("redacted_data"),
            provider_id=data.get("provider_id"),
            encrypted_content=data.get("encrypted_content"),
        )
    raise StoreError(f"unknown content block type {kind!r}")


def _optional_str(data: Mapping[str, Any], name: str) -> str | None:
    """The string field `name`, or None when absent (rows from before it existed)."""
    value = data.get(name)
    return None if value is None else str(value)


def message_to_json(message: Message, *, blobs: BlobSink | None = None) -> Json:
    """A Message as JSON; large tool results go to `blobs` when one is given."""
    if isinstance(message.content, str):
        return {"role": message.role, "content": message.content}
    return {
        "role": message.role,
        "content": [block_to_json(b, blobs=blobs) for b in message.content],
    }


def message_from_json(
    data: Mapping[str, Any], *, blobs: BlobSink | None = None
) -> Message:
    """The inverse of `message_to_json`.

    Raises:
        StoreError: if the data is not a message.
    """
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise StoreError(f"not a message role: {role!r}")
    content = data.get("content", "")
    if isinstance(content, str):
        return Message(role, content)
    return Message(role, tuple(block_from_json(b, blobs=blobs) for b in content))


def response_to_json(response: ModelResponse) -> Json:
    """A ModelResponse as JSON."""
    return {
        "content": [block_to_json(b) for b in response.content],
        "stop_reason": response.stop_reason.value,
        "usage": usage_to_json(response.usage),
        "raw_stop_reason": response.raw_stop_reason,
        "model": response.model,
    }


def _value(value: object) -> Any:
    if isinstance(value, Message):
        return message_to_json(value)
    if isinstance(value, ToolCall | ToolResult | Text | Thinking | Image):
        return block_to_json(value)
    if isinstance(value, ModelResponse):
        return response_to_json(value)
    if isinstance(value, Usage):
        return usage_to_json(value)
    if isinstance(value, FileRead):
        return file_read_to_json(value)
    if isinstance(value, StopReason | enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_value(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _value(v) for k, v in value.items()}
    return _scalar_or_record(value)


def _scalar_or_record(value: object) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # an event's record (a PendingApproval): its fields, by name
        return {
            f.name: _value(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    return repr(value)


def file_read_to_json(file: FileRead) -> Json:
    """One file of the read ledger as JSON (see `ReadStateChanged`)."""
    return {
        "path": file.path,
        "mtime_ns": file.mtime_ns,
        "size": file.size,
        "ranges": [list(span) for span in file.ranges],
    }


def file_read_from_json(data: Mapping[str, Any]) -> FileRead:
    """The inverse of `file_read_to_json`.

    Raises:
        StoreError: if `data` is not a stored file record.
    """
    try:
        ranges = tuple(
            (int(first), None if shown is None else int(shown))
            for first, shown in data.get("ranges", ())
        )
        return FileRead(
            str(data["path"]), int(data["mtime_ns"]), int(data["size"]), ranges
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"a stored read-ledger entry is malformed: {exc!r}") from exc


def event_to_json(event: Event, *, omit: Sequence[str] = ()) -> Json:
    """An event as ``{"type": <class name>, <field>: <value>, ...}``.

    Fields named in `omit` are left out (the store omits the transcript that
    `RunFinished` carries, since it keeps messages itself).
    """
    out: Json = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        if f.name in omit or f.name == "_":
            continue
        out[f.name] = _value(getattr(event, f.name))
    return out
