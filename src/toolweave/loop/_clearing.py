"""Clearing old tool results: a short sticky stub in place of a result the model has seen.

Used by micro-compaction (results past an age, seed 002 §1) and by the last
tier of shrinking a request that does not fit (`Shrinker`). A cleared result
keeps its place, its call id and its error flag, so every tool_use/tool_result
pair stays intact; only its content becomes a stub naming the call and how to
get the result again: the file the full text was saved to, when it could be
saved, else calling the tool again (with a warning that its effects would
repeat). The stub depends only on the call and the result, so a result cleared
once reads the same on every later request (the provider's prompt cache stays
warm after the one rewrite), and a stub is never cleared again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import final

from ..execution import save_result
from ..messages import Message, ToolCall, ToolResult

__all__ = [
    "CLEARED_MARKER",
    "ClearedResult",
    "ResultSaver",
    "clear_results",
    "clearable",
    "cleared_stub",
    "result_slots",
]

CLEARED_MARKER = "[toolweave: old tool result cleared"
"""How every stub begins (so a stub is recognised and never cleared again)."""

_MIN_CLEARABLE = 200
"""Results shorter than this (in characters) stay: a stub would save nothing."""


@dataclass(frozen=True, slots=True)
class ClearedResult:
    """One tool result that was cleared."""

    call: ToolCall
    """The call it answered."""
    chars: int
    """How long its text was."""
    path: Path | None
    """Where the full text was saved (None = it could not be)."""


@dataclass(frozen=True, slots=True)
class ResultSlot:
    """Where one tool result sits in a transcript, with the call it answers."""

    message: int
    """Index of the user message holding it."""
    position: int
    """Its index among that message's blocks."""
    call: ToolCall
    """The call it answers."""
    result: ToolResult
    """The result."""
    turn: int
    """How many assistant messages came before its call's (its age is counted from it)."""


def result_slots(messages: Sequence[Message]) -> Iterator[ResultSlot]:
    """Every tool result of `messages` with its call, oldest first."""
    turn = 0
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        calls = message.tool_calls
        if calls and index + 1 < len(messages):
            answer = messages[index + 1]
            results = iter(range(len(answer.blocks)))
            for call in calls:
                for position in results:
                    block = answer.blocks[position]
                    if isinstance(block, ToolResult):
                        yield ResultSlot(index + 1, position, call, block, turn)
                        break
        turn += 1


def clearable(result: ToolResult) -> bool:
    """A result whose text is worth clearing: long enough, text only, not a stub already."""
    content = result.content
    return (
        isinstance(content, str)
        and len(content) >= _MIN_CLEARABLE
        and not content.startswith(CLEARED_MARKER)
    )


def cleared_stub(call: ToolCall, chars: int, path: Path | None, why: str) -> str:
    """The text that stands in for a cleared result."""
    if path is not None:
        again = f"The full result was saved to {path}: read that file to see it again."
    else:
        again = (
            f"To see it again, call {call.name} again with the same input"
            " (any effect it has happens again)."
        )
    return (
        f"{CLEARED_MARKER} ({why}): the result of {call.name} (call {call.ref},"
        f" {chars:,} characters).] {again}"
    )


def clear_results(
    messages: Sequence[Message],
    slots: Sequence[ResultSlot],
    *,
    save: Callable[[ToolCall, str], Path | None],
    why: str,
) -> tuple[tuple[Message, ...], list[ClearedResult]]:
    """`messages` with the results at `slots` replaced by stubs; and what was cleared.

    `save(call, text)` keeps the full text somewhere the model can read it
    (None = it could not). Blocking I/O through `save`. Slots whose result is
    not `clearable` are left alone.
    """
    by_message: dict[int, dict[int, ToolResult]] = {}
    cleared: list[ClearedResult] = []
    for slot in slots:
        result = slot.result
        if not clearable(result):
            continue
        text = result.text
        path = save(slot.call, text)
        stub = cleared_stub(slot.call, len(text), path, why)
        by_message.setdefault(slot.message, {})[slot.position] = dataclasses.replace(
            result, content=stub
        )
        cleared.append(ClearedResult(slot.call, len(text), path))
    if not cleared:
        return tuple(messages), []
    out = list(messages)
    for index, replaced in by_message.items():
        blocks = list(out[index].blocks)
        for position, result in replaced.items():
            blocks[position] = result
        out[index] = Message(out[index].role, tuple(blocks))
    return tuple(out), cleared


@final
class ResultSaver:
    """Saves a cleared result's full text under the results directory. Blocking I/O.

    Named by the call's id and key (``tool-results/<id>@<key>.txt``), as large
    results are. None when there is no directory or the write fails: the stub
    then says to call the tool again.
    """

    def __init__(self, results_dir: Path | None) -> None:
        self._dir = results_dir

    def __call__(self, call: ToolCall, text: str) -> Path | None:
        if self._dir is None:
            return None
        try:
            return save_result(self._dir, call.id, text, call.ref)
        except OSError:
            return None
