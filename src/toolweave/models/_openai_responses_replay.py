"""A whole Responses API response -> the events a stream of it would have carried.

Used when a request is sent without streaming: the events go through
`ResponsesStreamMapper` like a live stream's. Message text replays as one
``output_text`` (or ``refusal``) delta per content part; every output item then
replays as its ``output_item.done`` (authoritative for calls and reasoning);
the response's status picks the final event (``completed``, ``incomplete`` or
``failed``, which the mapper raises as the error it names).
"""

from __future__ import annotations

from typing import Any, Final

from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    ResponseOutputItemDoneEvent,
    ResponseRefusalDeltaEvent,
    ResponseTextDeltaEvent,
)

__all__ = ["responses_replay"]

_FINAL: Final[dict[str, tuple[str, type[Any]]]] = {
    "incomplete": ("response.incomplete", ResponseIncompleteEvent),
    "failed": ("response.failed", ResponseFailedEvent),
}
_COMPLETED: Final = ("response.completed", ResponseCompletedEvent)


def responses_replay(response: Response) -> list[Any]:
    """The stream events of `response`, in the order the API streams them."""
    events: list[Any] = [
        ResponseCreatedEvent.model_construct(
            type="response.created",
            sequence_number=0,
            response=response.model_dump(warnings=False)
            | {"output": [], "status": "in_progress"},
        )
    ]
    for position, item in enumerate(response.output):
        if item.type == "message":
            events.extend(_text_deltas(item, position))
        events.append(
            ResponseOutputItemDoneEvent.model_construct(
                type="response.output_item.done",
                sequence_number=len(events),
                output_index=position,
                item=item.model_dump(warnings=False),
            )
        )
    kind, cls = _FINAL.get(response.status or "", _COMPLETED)
    events.append(
        cls.model_construct(
            type=kind,
            sequence_number=len(events),
            response=response.model_dump(warnings=False),
        )
    )
    return events


def _text_deltas(item: Any, position: int) -> list[Any]:
    deltas: list[Any] = []
    for index, part in enumerate(item.content):
        common = {
            "item_id": item.id,
            "output_index": position,
            "content_index": index,
            "sequence_number": 0,
        }
        if part.type == "output_text":
            deltas.append(
                ResponseTextDeltaEvent.model_construct(
                    type="response.output_text.delta",
                    delta=part.text,
                    logprobs=[],
                    **common,
                )
            )
        elif part.type == "refusal":
            deltas.append(
                ResponseRefusalDeltaEvent.model_construct(
                    type="response.refusal.delta", delta=part.refusal, **common
                )
            )
    return deltas
