"""A whole Anthropic message -> the events a stream of it would have carried.

Used when a request is sent without streaming: the events go through
`AnthropicStreamMapper` like a live stream's, so one piece of code maps blocks,
thinking signatures, tool calls, stop reasons and usage. Each block replays as
a ``content_block_start`` carrying it whole (a tool call's input included)
followed by its ``content_block_stop``. Blocks the installed SDK does not
model (``mcp_tool_use``, newer server tools) are dumped without pydantic's
serializer warnings: they reach the mapper as data, and it skips them.
"""

from __future__ import annotations

from typing import Any

from anthropic.types import (
    Message,
    RawContentBlockStartEvent,
    RawContentBlockStopEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
)

__all__ = ["anthropic_replay"]


def anthropic_replay(message: Message) -> list[Any]:
    """The stream events of `message`, in the order the API streams them."""
    # A server that left usage out gets no usage rather than a crash.
    usage = getattr(message, "usage", None)
    usage_fields = usage.model_dump(warnings=False) if usage is not None else {}
    start = message.model_dump(warnings=False) | {"content": [], "stop_reason": None}
    events: list[Any] = [
        RawMessageStartEvent.model_construct(type="message_start", message=start)
    ]
    for index, block in enumerate(message.content):
        events.append(
            RawContentBlockStartEvent.model_construct(
                type="content_block_start",
                index=index,
                content_block=block.model_dump(warnings=False),
            )
        )
        events.append(
            RawContentBlockStopEvent.model_construct(
                type="content_block_stop", index=index
            )
        )
    events.append(
        RawMessageDeltaEvent.model_construct(
            type="message_delta",
            delta={
                "stop_reason": message.stop_reason,
                "stop_sequence": message.stop_sequence,
            },
            usage=usage_fields,
        )
    )
    events.append(RawMessageStopEvent.model_construct(type="message_stop"))
    return events
