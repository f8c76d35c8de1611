"""Repairs what real providers send that they shouldn't, at the moment a tool call completes.

- Empty call ids (seen from OpenAI-compatible servers) get stable generated ids.
  A *repeated* id is kept as the model wrote it: toolweave keys calls by their
  position (`ToolCall.key`), and the provider converters make ids unique on the
  way back (`unique_call_ids`), so the transcript and the store keep the original.
- A hallucinated ``multi_tool_use.parallel`` wrapper call is unpacked into the
  calls it names.
- Arguments that are not a JSON object become a `ToolCall` with `raw_arguments`
  set and an empty input; the lifecycle turns it into an error result for that
  call. The stream never crashes on them: not on JSON nested deeper than the
  parser's recursion limit (``[[[[…``, which `json.loads` answers with
  `RecursionError`), nor on an object that names one key twice (the model said
  two things; keeping either would be a guess, so the call fails closed).
  Whitespace around the JSON is no fault (JSON allows it), so it never turns a
  good call into a failed one.
- A tool name with stray characters around it (whitespace, quotes, a chat
  template's special token, a ``functions.`` prefix) is read as the offered
  tool it names, but only when the cleaned name is exactly one offered tool's
  name: anything else keeps the name as sent, so the lifecycle reports an
  unknown tool instead of guessing (fail closed).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, final

from ..messages import ToolCall

__all__ = ["ToolCallBuilder", "clean_tool_name", "dump_arguments", "parse_arguments"]

_WRAPPER_NAME = "multi_tool_use.parallel"
_WRAPPER_PREFIX = "functions."
_SPECIAL_TOKEN = re.compile(r"<\|[^|<>]*\|>|</?tool_call>")
_STRAY = " \t\r\n\"'`.,:;()"


def clean_tool_name(name: str, offered: frozenset[str]) -> str:
    """The offered tool `name` stands for, or `name` unchanged.

    An offered name (or no offer to compare with) is kept as it is; otherwise
    special tokens, surrounding whitespace, quotes and punctuation, and a
    ``functions.`` prefix are taken off, and the result is used only if it is
    an offered name.
    """
    if not offered or name in offered:
        return name
    cleaned = _SPECIAL_TOKEN.sub("", name).strip(_STRAY).removeprefix(_WRAPPER_PREFIX)
    cleaned = cleaned.strip(_STRAY)
    return cleaned if cleaned in offered else name


def parse_arguments(
    arguments: str | Mapping[str, Any] | None,
) -> tuple[dict[str, Any], str | None]:
    """``(input, raw_arguments)`` for a tool call's arguments.

    An empty string means no arguments (``{}``). Anything that is not a JSON
    object comes back as ``({}, the raw text)``: a list, a scalar, text that
    does not parse, JSON nested past the parser's recursion limit, and an
    object with a duplicate key at any depth.
    """
    if arguments is None:
        return {}, None
    if isinstance(arguments, Mapping):
        return dict(arguments), None
    if not arguments.strip():
        return {}, None
    try:
        parsed = json.loads(arguments, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError):
        return {}, arguments
    if isinstance(parsed, dict):
        return parsed, None
    return {}, arguments


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict; raises ValueError if a key comes twice."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key in JSON object")
    return obj


def dump_arguments(call: ToolCall) -> str:
    """The call's arguments as JSON text for the wire (its raw text if it was not JSON)."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(dict(call.input), ensure_ascii=False, separators=(",", ":"))


@final
class ToolCallBuilder:
    """Builds the `ToolCall`s of one response, in order, every one with an id.

    Ids are stable: the same stream always yields the same ids. A missing id
    becomes ``call_<response id>_<position>`` (``_2``, ``_3`` … appended if that
    is taken); a given id is kept, repeated or not. `tool_names` are the offered
    tools, against which a name with stray characters is read
    (`clean_tool_name`). Not thread-safe; one builder per stream.
    """

    def __init__(
        self, response_id: str | None = None, *, tool_names: Iterable[str] = ()
    ) -> None:
        self._offered = frozenset(tool_names)
        self._seen: set[str] = set()
        self._position = 0
        self.response_id = response_id
        """The provider's response id, used in generated call ids (set it when known)."""

    def build(
        self,
        call_id: str | None,
        name: str | None,
        arguments: str | Mapping[str, Any] | None,
        *,
        provider_id: str | None = None,
    ) -> list[ToolCall]:
        """The call(s) one completed tool-call block stands for (a wrapper gives several).

        `provider_id` is the block's own item id where the provider has one
        (Responses ``fc_…``); it is kept as given. A wrapper's unpacked calls
        share one provider item, so only the first carries its id: item ids
        must stay unique in a request, and the first is the item that followed
        any reasoning before it.
        """
        position = self._position
        self._position += 1
        unique_id = self._unique(call_id, position)
        tool_input, raw = parse_arguments(arguments)
        if name == _WRAPPER_NAME and raw is None:
            unpacked = self._unpack(unique_id, tool_input)
            if unpacked:
                if provider_id:
                    unpacked[0] = replace(unpacked[0], provider_id=provider_id)
                return unpacked
        name = clean_tool_name(name or "", self._offered)
        return [
            ToolCall(
                unique_id,
                name,
                tool_input,
                raw_arguments=raw,
                provider_id=provider_id or None,
            )
        ]

    def _unique(self, call_id: str | None, position: int) -> str:
        if call_id:
            self._seen.add(call_id)
            return call_id
        base = f"call_{self.response_id or 'tw'}_{position}"
        candidate, suffix = base, 1
        while candidate in self._seen:
            suffix += 1
            candidate = f"{base}_{suffix}"
        self._seen.add(candidate)
        return candidate

    def _unpack(
        self, wrapper_id: str, wrapper_input: Mapping[str, Any]
    ) -> list[ToolCall]:
        uses = wrapper_input.get("tool_uses")
        if not isinstance(uses, list) or not all(_is_use(use) for use in uses):
            return []
        calls: list[ToolCall] = []
        for index, use in enumerate(uses):
            name = use["recipient_name"].removeprefix(_WRAPPER_PREFIX)
            name = clean_tool_name(name, self._offered)
            parameters = use.get("parameters", {})
            if isinstance(parameters, Mapping):
                tool_input, raw = dict(parameters), None
            else:
                tool_input, raw = {}, json.dumps(parameters)
            call_id = self._unique(f"{wrapper_id}_{index}", index)
            calls.append(ToolCall(call_id, name, tool_input, raw_arguments=raw))
        return calls


def _is_use(use: object) -> bool:
    return isinstance(use, Mapping) and isinstance(use.get("recipient_name"), str)
