"""OpenAI Responses stream events -> neutral chunks.

A function call is emitted when its ``response.output_item.done`` arrives (its
arguments there are authoritative); a reasoning item is closed with its id and
encrypted content so it can be passed back. Function calls and messages keep
their item ids too (`ToolCall.provider_id`, `Text.provider_id`): an item that
followed a reasoning item goes back with its id, or the API rejects the
reasoning item sent without it. A call's id is the one at
``output_item.done``; a message's comes with each text delta (``item_id``),
so no extra chunk is needed. An item the server sent without an id (some
gateways) keeps None. ``response.failed`` and ``error`` events raise the
neutral error their code names.

An item is known by its ``output_index`` (its position in the response), not
by its id: a proxy may give every event of one item a new id (GitHub Copilot's
does), and keyed by id each text delta would become its own block, a
reasoning item would come out twice and a function call would be emitted
again, empty, at the end. Events without an ``output_index`` fall back to the
item id. A position used again by a second item (added after the first was
added) is a second item, never merged into the first.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, final

from .._exceptions import ModelConnectionError, ModelServerError
from ..messages import StopReason, Usage
from ._base import ReasoningChunk, StreamChunk, StreamEnd, TextChunk, ToolUseReady
from ._blocks import BlockNumbers
from ._openai_chat_stream import openai_usage
from ._openai_errors import error_from_payload
from ._repair import ToolCallBuilder

__all__ = ["INCOMPLETE_REASONS", "ResponsesStreamMapper"]

INCOMPLETE_REASONS: Final[dict[str, StopReason]] = {
    "max_output_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}
"""Why a response is ``incomplete``; other reasons are UNKNOWN with the raw string kept."""

_NOTHING: Final[tuple[StreamChunk, ...]] = ()
_REASONING_DELTAS: Final = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)
_FINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete"})


@dataclass(slots=True)
class _Call:
    call_id: str | None
    name: str
    item_id: str | None
    parts: list[str] = field(default_factory=list)


@final
class ResponsesStreamMapper:
    """Maps the events of one Responses stream. Not reusable, not thread-safe."""

    def __init__(self, tool_names: Iterable[str] = ()) -> None:
        self._blocks = BlockNumbers()
        self._calls = ToolCallBuilder(tool_names=tool_names)
        self._pending: dict[Hashable, _Call] = {}
        self._reasoning_seen: dict[Hashable, int] = {}  # item -> last summary index
        self._emitted_calls = False
        self._refused = False
        self._final: Any = None
        self._model: str | None = None
        self._aliases: dict[Hashable, Hashable] = {}  # a reused position -> new key
        self._opened: set[Hashable] = set()
        self._kinds: dict[Hashable, str] = {}  # item key -> its type
        self._closed: set[Hashable] = set()

    def feed(self, event: Any) -> tuple[StreamChunk, ...] | list[StreamChunk]:
        """Chunks for one SDK event; raises the neutral error of a failed response."""
        kind = event.type
        if kind == "response.output_text.delta":
            return (self._text(event),)
        if kind == "response.function_call_arguments.delta":
            call = self._pending.get(self._item(event))
            if call is not None:
                call.parts.append(event.delta)
            return _NOTHING
        if kind in _REASONING_DELTAS:
            return (self._reasoning_delta(event),)
        if kind == "response.output_item.added":
            self._added(self._item(event, starts=True), event.item)
        elif kind == "response.output_item.done":
            return self._done(self._item(event, ends=True), event.item)
        elif kind == "response.refusal.delta":
            self._refused = True
            return (self._text(event),)
        else:
            self._lifecycle(kind, event)
        return _NOTHING

    def finish(self) -> list[StreamChunk]:
        """Calls left open (a truncated response) and the `StreamEnd`."""
        if self._final is None:
            raise ModelConnectionError(
                "responses stream ended before response.completed"
            )
        out: list[StreamChunk] = []
        for key in list(self._pending):
            call = self._pending.pop(key)
            out.extend(
                self._ready(
                    key, call.call_id, call.name, "".join(call.parts), call.item_id
                )
            )
        stop, raw = self._stop_reason(self._final)
        out.append(
            StreamEnd(
                stop, _usage(self._final.usage), raw_stop_reason=raw, model=self._model
            )
        )
        return out

    def _lifecycle(self, kind: str, event: Any) -> None:
        if kind == "response.created":
            self._model = event.response.model
            self._calls.response_id = event.response.id
        elif kind in _FINAL_EVENTS:
            self._final = event.response
            self._model = event.response.model or self._model
        elif kind == "response.failed":
            error = event.response.error
            code = error.code if error is not None else None
            raise error_from_payload(code, error.message if error is not None else None)
        elif kind == "error":
            raise error_from_payload(event.code, event.message)

    def _item(
        self, event: Any, *, starts: bool = False, ends: bool = False
    ) -> Hashable:
        """The key of the item `event` belongs to.

        A position used again, by an item added after the first was added (or
        done after it was done), is another item: it gets a key of its own, so
        the two never share a block and neither is lost.
        """
        raw = _key(event)
        key = self._aliases.get(raw, raw) if self._aliases else raw
        if (starts and key in self._opened) or (ends and key in self._closed):
            key = self._aliases[raw] = ("again", len(self._opened) + len(self._closed))
        if starts:
            self._opened.add(key)
        if ends:
            self._closed.add(key)
        return key

    def _text(self, event: Any) -> TextChunk:
        """A text (or refusal) delta, carrying the id of the message it is part of."""
        key = self._item(event)
        self._expect(key, "message", event)
        return TextChunk(
            event.delta,
            block=self._blocks.of(key),
            provider_id=_id_text(getattr(event, "item_id", None)),
        )

    def _reasoning_delta(self, event: Any) -> ReasoningChunk:
        index = getattr(event, "summary_index", 0)
        key = self._item(event)
        self._expect(key, "reasoning", event)
        previous = self._reasoning_seen.get(key)
        self._reasoning_seen[key] = index
        text = event.delta
        if previous is not None and previous != index:
            text = "\n\n" + text  # a new summary part
        return ReasoningChunk(text, block=self._blocks.of(key))

    def _expect(self, key: Hashable, kind: str, event: Any) -> None:
        """Raise `ModelServerError` if item `key` is of another kind than `kind`.

        Text streamed into a function call's position (or a call done where
        text was streamed) has nowhere to go: one would overwrite the other in
        the response and something the model said would be lost. An item
        first seen through a delta (no ``output_item.added``) is of the
        delta's kind from then on.
        """
        started = self._kinds.setdefault(key, kind)
        if started != kind:
            raise ModelServerError(
                f"responses stream sent {getattr(event, 'type', 'an event')!s} for"
                f" output item {key!r}, a {started} item"
            )

    def _added(self, key: Hashable, item: Any) -> None:
        self._kinds[key] = item.type
        if item.type == "function_call":
            self._pending[key] = _Call(item.call_id, item.name, _item_id(item))

    def _done(self, key: Hashable, item: Any) -> list[StreamChunk]:
        if item.type in ("function_call", "message", "reasoning"):
            self._expect(key, item.type, item)
        if item.type == "function_call":
            added = self._pending.pop(key, None)
            item_id = _item_id(item) or (added.item_id if added else None)
            # The done item's arguments are authoritative; a gateway that leaves
            # them out (null) still streamed them: those are used, not ``{}``.
            args = item.arguments
            if not isinstance(args, str):
                args = "".join(added.parts) if added is not None else None
            return self._ready(key, item.call_id, item.name or "", args, item_id)
        if item.type == "reasoning":
            text = ""
            if key not in self._reasoning_seen and item.summary:
                text = "\n\n".join(s.text for s in item.summary)
            chunk = ReasoningChunk(
                text,
                block=self._blocks.of(key),
                provider_id=item.id,
                encrypted_content=item.encrypted_content,
            )
            return [chunk]
        return []

    def _ready(
        self,
        key: Hashable,
        call_id: str | None,
        name: str,
        args: str | None,
        item_id: str | None,
    ) -> list[StreamChunk]:
        self._emitted_calls = True
        calls = self._calls.build(call_id, name, args, provider_id=item_id)
        numbers = [self._blocks.of(key)] + [self._blocks.fresh() for _ in calls[1:]]
        return [ToolUseReady(c, block=n) for c, n in zip(calls, numbers, strict=True)]

    def _stop_reason(self, response: Any) -> tuple[StopReason, str | None]:
        status = response.status
        if status == "incomplete":
            details = response.incomplete_details
            reason = details.reason if details is not None else None
            return INCOMPLETE_REASONS.get(
                reason or "", StopReason.UNKNOWN
            ), reason or status
        if status != "completed":
            return StopReason.UNKNOWN, status
        if self._refused:
            return StopReason.REFUSAL, status
        return (
            StopReason.TOOL_USE if self._emitted_calls else StopReason.END_TURN
        ), status


def _usage(usage: Any) -> Usage:
    if usage is None:
        return Usage(requests=1)
    return openai_usage(
        usage.input_tokens, usage.output_tokens, usage.input_tokens_details
    )


def _item_id(item: Any) -> str | None:
    """The item's own id (``fc_…``, ``msg_…``), or None when the server sent none."""
    return _id_text(getattr(item, "id", None))


def _id_text(value: object) -> str | None:
    """`value` if it is a non-empty string (an id a server may leave out or null)."""
    return value if isinstance(value, str) and value else None


def _key(event: Any) -> Hashable:
    """The item an event belongs to: its output position, else its item id."""
    position = getattr(event, "output_index", None)
    if position is not None:
        return ("output", position)
    item = getattr(event, "item", None)
    if item is not None:
        key: Hashable = getattr(item, "id", None) or getattr(item, "call_id", None)
        return key
    item_id: Hashable = event.item_id
    return item_id
