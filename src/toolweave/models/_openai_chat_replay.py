"""A whole Chat Completions response -> the chunks a stream of it would have carried.

Used when a request is sent without streaming (``stream=False``, or a server
that refuses to stream with tools): the chunks go through `ChatStreamMapper`
like a live stream's, so id repair, the legacy ``function_call`` field, stop
reasons and usage are mapped by one piece of code whichever way the response
came. Built leniently (``model_construct``, as the SDK builds what it reads),
so a server's unknown finish reason or extra fields survive to the mapper.
"""

from __future__ import annotations

from typing import Any, Final

from openai.types.chat import ChatCompletion, ChatCompletionChunk

__all__ = ["chat_replay"]

_REASONING_KEYS: Final = ("reasoning_content", "reasoning")


def chat_replay(completion: ChatCompletion) -> list[ChatCompletionChunk]:
    """The chunks of `completion`: its first choice whole, then its usage if it has one.

    A response without choices replays as no choice at all, which the mapper
    reports as a stream that never finished.
    """
    head: dict[str, Any] = {
        "id": completion.id,
        "object": "chat.completion.chunk",
        "created": completion.created,
        "model": completion.model,
    }
    chunks: list[dict[str, Any]] = []
    if completion.choices:
        choice = completion.choices[0]
        delta = _delta(choice.message)
        chunks.append(
            head
            | {
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": choice.finish_reason}
                ]
            }
        )
    if completion.usage is not None:
        chunks.append(
            head | {"choices": [], "usage": completion.usage.model_dump(warnings=False)}
        )
    return [ChatCompletionChunk.model_construct(**chunk) for chunk in chunks]


def _delta(message: Any) -> dict[str, Any]:
    """One delta holding the whole message: text, reasoning, refusal and calls."""
    delta: dict[str, Any] = {"role": "assistant", "content": message.content}
    extra = message.model_extra or {}
    delta.update({key: extra[key] for key in _REASONING_KEYS if key in extra})
    if message.refusal:
        delta["refusal"] = message.refusal
    if message.function_call is not None:
        delta["function_call"] = message.function_call.model_dump(warnings=False)
    if message.tool_calls:
        delta["tool_calls"] = [
            {"index": index} | call.model_dump(warnings=False)
            for index, call in enumerate(message.tool_calls)
        ]
    return delta
