"""What travels between a Ray worker and the driver: chunks, outcomes, portable events."""

from __future__ import annotations

import dataclasses
import json
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._exceptions import ToolError
from ..events import (
    Event,
    MessageAppended,
    RunFinished,
    ToolResultReady,
    TranscriptReplaced,
)
from ..messages import Message, ToolResult

__all__ = [
    "Chunk",
    "Outcome",
    "Progress",
    "Started",
    "portable_error",
    "portable_event",
]


@dataclass(frozen=True, slots=True)
class Progress:
    """A remote tool's `ToolContext.report_progress`, on its way to the driver."""

    message: str
    """What the tool said."""
    fraction: float | None = None
    """Completion between 0 and 1, if known."""


@dataclass(frozen=True, slots=True)
class Started:
    """The first item of a remote stream: where the work runs.

    The remote functions stream with a backpressure of one object, so the
    worker's next step waits until the driver has taken this item: the work
    itself (a tool, a session) begins only after the driver knows it began. A
    stream that ends before the driver took it never ran anything.
    """

    node_id: str
    """The Ray node the work runs on (hex id)."""
    pid: int
    """The worker process."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """Items a worker emitted since the last chunk, in emission order."""

    items: tuple[object, ...]
    """Events or `Progress` records; empty for a heartbeat (nothing happened)."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """The last item of a remote stream: the function's return value or its error."""

    value: object = None
    """What the remote function returned (when `error` is None)."""
    error: Exception | None = None
    """What it raised, as an exception the driver can unpickle."""


def portable_error(exc: Exception) -> Exception:
    """`exc` if it survives pickling, else a `ToolError` with the same words."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return ToolError(text)
    return exc


def _plain_result(result: ToolResult) -> ToolResult:
    # A context modifier acts on the worker's objects; it was applied there and
    # is not part of the transcript, so it does not travel.
    if result.context_modifier is None:
        return result
    return dataclasses.replace(result, context_modifier=None)


def _plain_message(message: Message) -> Message:
    if isinstance(message.content, str) or not message.tool_results:
        return message
    blocks = tuple(
        _plain_result(b) if isinstance(b, ToolResult) else b for b in message.content
    )
    return Message(message.role, blocks)


def _json_safe(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _plain_extra(extra: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if _json_safe(v)}


def portable_event(event: Event) -> Event:
    """`event` without the parts that only make sense in the worker's process.

    Context modifiers are dropped from tool results (in `ToolResultReady` and
    in every message an event carries) and `RunFinished.extra` keeps only JSON
    values; everything the transcript holds is unchanged.
    """
    if isinstance(event, ToolResultReady):
        return dataclasses.replace(event, result=_plain_result(event.result))
    if isinstance(event, MessageAppended):
        return dataclasses.replace(event, message=_plain_message(event.message))
    if isinstance(event, TranscriptReplaced):
        plain = tuple(_plain_message(m) for m in event.messages)
        return dataclasses.replace(event, messages=plain)
    if isinstance(event, RunFinished):
        return dataclasses.replace(
            event,
            messages=tuple(_plain_message(m) for m in event.messages),
            extra=_plain_extra(event.extra),
        )
    return event
