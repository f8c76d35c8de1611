"""Hostile model streams, written once and spoken in each provider's wire format.

A `Turn` says what the model sends (text, tool calls with their arguments cut
into deltas, a stop reason, usage); `sse_for` renders it as the SSE body the
provider's API would put on the wire, so one adversarial case runs through
every official SDK that can express it. Knobs let a case break the framing
the way a bad gateway does: leave out the final event, send a raw line that
is not JSON, add an event type nobody knows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from models_loopback import SseReply


@dataclass(frozen=True)
class Call:
    """A tool call as the model streams it: `parts` are its argument deltas."""

    id: str
    name: str
    parts: tuple[str, ...] = ("{}",)


@dataclass(frozen=True)
class Turn:
    """One model response. `text_after` is text the model sends after its calls."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    text_after: str = ""
    stop: str | None = None  # None: the provider's usual reason for the content
    usage: dict[str, Any] | None = field(
        default_factory=lambda: {"input": 10, "output": 5}
    )
    final: bool = True  # False: no message_stop / finish_reason / response.completed
    extra_events: tuple[str, ...] = ()  # raw SSE events sent before the final one


def _event(name: str | None, data: Any) -> str:
    head = f"event: {name}\n" if name else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n"


def anthropic_sse(turn: Turn) -> str:
    """The turn as an Anthropic Messages stream."""
    usage = turn.usage or {}
    out = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_adv",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": usage.get("input", 0),
                        "output_tokens": 0,
                    },
                },
            },
        )
    ]
    index = 0

    def text(value: str) -> None:
        nonlocal index
        start = {"type": "text", "text": ""}
        out.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        delta = {"type": "text_delta", "text": value}
        out.append(
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        )
        out.append(
            _event("content_block_stop", {"type": "content_block_stop", "index": index})
        )
        index += 1

    if turn.text:
        text(turn.text)
    for call in turn.calls:
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        out.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        for part in call.parts:
            delta = {"type": "input_json_delta", "partial_json": part}
            out.append(
                _event(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": delta},
                )
            )
        out.append(
            _event("content_block_stop", {"type": "content_block_stop", "index": index})
        )
        index += 1
    if turn.text_after:
        text(turn.text_after)
    out.extend(turn.extra_events)
    stop = turn.stop or ("tool_use" if turn.calls else "end_turn")
    delta_usage = {"output_tokens": usage.get("output", 0)} if turn.usage else {}
    out.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": delta_usage or {"output_tokens": 0},
            },
        )
    )
    if turn.final:
        out.append(_event("message_stop", {"type": "message_stop"}))
    return "".join(out)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-adv",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-4.1",
        "choices": [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        ],
    }


def chat_sse(turn: Turn, *, indexes: tuple[int, ...] | None = None) -> str:
    """The turn as a Chat Completions stream; `indexes` overrides each call's index."""
    out = [_event(None, _chunk({"role": "assistant", "content": ""}))]
    if turn.text:
        out.append(_event(None, _chunk({"content": turn.text})))
    for position, call in enumerate(turn.calls):
        index = indexes[position] if indexes is not None else position
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        out.append(_event(None, _chunk({"tool_calls": [head]})))
        for part in call.parts:
            more = {"index": index, "function": {"arguments": part}}
            out.append(_event(None, _chunk({"tool_calls": [more]})))
    if turn.text_after:
        out.append(_event(None, _chunk({"content": turn.text_after})))
    out.extend(turn.extra_events)
    if turn.final:
        stop = turn.stop or ("tool_calls" if turn.calls else "stop")
        out.append(_event(None, _chunk({}, stop)))
        if turn.usage is not None:
            usage = {
                "prompt_tokens": turn.usage.get("input", 0),
                "completion_tokens": turn.usage.get("output", 0),
                "total_tokens": 0,
            }
            last = _chunk({})
            last["choices"] = []
            last["usage"] = usage
            out.append(_event(None, last))
    out.append(_event(None, "[DONE]"))
    return "".join(out)


def responses_sse(turn: Turn) -> str:
    """The turn as a Responses stream."""
    seq = 0

    def ev(kind: str, **body: Any) -> None:
        nonlocal seq
        out.append(_event(kind, {"type": kind, "sequence_number": seq, **body}))
        seq += 1

    base: dict[str, Any] = {
        "id": "resp_adv",
        "object": "response",
        "created_at": 1767225600,
        "status": "in_progress",
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }
    out: list[str] = []
    ev("response.created", response=base)
    position = 0

    def message(value: str) -> None:
        nonlocal position
        item_id = f"msg_{position}"
        item = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        ev("response.output_item.added", output_index=position, item=item)
        ev(
            "response.output_text.delta",
            item_id=item_id,
            output_index=position,
            content_index=0,
            delta=value,
            logprobs=[],
        )
        done = dict(item, status="completed")
        done["content"] = [
            {"type": "output_text", "annotations": [], "logprobs": [], "text": value}
        ]
        ev("response.output_item.done", output_index=position, item=done)
        position += 1

    if turn.text:
        message(turn.text)
    for call in turn.calls:
        item_id = f"fc_{position}"
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call.id,
            "name": call.name,
        }
        ev("response.output_item.added", output_index=position, item=item)
        for part in call.parts:
            ev(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=position,
                delta=part,
            )
        done = dict(item, status="completed", arguments="".join(call.parts))
        ev("response.output_item.done", output_index=position, item=done)
        position += 1
    if turn.text_after:
        message(turn.text_after)
    out.extend(turn.extra_events)
    if turn.final:
        usage = None
        if turn.usage is not None:
            usage = {
                "input_tokens": turn.usage.get("input", 0),
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": turn.usage.get("output", 0),
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 0,
            }
        # "incomplete:<reason>" is an incomplete response with that reason.
        status, _, reason = (turn.stop or "completed").partition(":")
        kind = "response.completed" if status == "completed" else "response.incomplete"
        details = {"reason": reason} if reason else None
        final = dict(base, status=status, usage=usage, incomplete_details=details)
        ev(kind, response=final)
    return "".join(out)


RENDER = {"anthropic": anthropic_sse, "openai_chat": chat_sse}
RENDER["openai_responses"] = responses_sse


def sse_for(case_id: str, turn: Turn) -> SseReply:
    """`turn` as the SSE reply of provider `case_id`."""
    return SseReply(RENDER[case_id](turn))
