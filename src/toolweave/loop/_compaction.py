"""Compaction: summarise older turns with the model; drop the oldest rounds as a last resort.

Both keep every tool_use/tool_result pair intact and leave a transcript the
provider accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import final

from .._exceptions import ModelError
from ..messages import Message, Text, Thinking, ToolCall, ToolResult, Usage
from ..models import Model, ModelRequest
from ._transcript import estimate_tokens, transcript_problems

__all__ = ["Compacted", "Compactor", "drop_oldest_rounds"]

_SUMMARY_SYSTEM = (
    "You compact a conversation between a user and an AI agent that uses tools."
    " Write a faithful summary the agent can continue from: the user's goals and"
    " instructions, decisions made, files and facts discovered, what was done,"
    " what failed and why, and what remains to do. Be specific (paths, names,"
    " numbers). Do not invent anything."
)
_SUMMARY_PREFIX = (
    "[Summary of the earlier conversation, written when it was compacted]\n"
)
_BLOCK_CHARS = 2_000


@dataclass(frozen=True, slots=True)
class Compacted:
    """A successful compaction."""

    messages: tuple[Message, ...]
    """The new transcript."""
    _: KW_ONLY
    before: int
    """Messages before."""
    after: int
    """Messages after (never more than `before`)."""
    usage: Usage = field(default_factory=Usage)
    """Tokens the summary call cost."""
    model: str = ""
    """The model that wrote the summary ('' when nothing was summarised)."""


def _render_block(block: object) -> str:
    if isinstance(block, Text):
        text = block.text
    elif isinstance(block, Thinking):
        return ""
    elif isinstance(block, ToolCall):
        text = f"(called tool {block.name} with {dict(block.input)!r})"
    elif isinstance(block, ToolResult):
        status = "error" if block.is_error else "result"
        text = f"(tool {status} for {block.call_id}: {block.text})"
    else:
        text = "(image)"
    if len(text) > _BLOCK_CHARS:
        text = text[:_BLOCK_CHARS] + f"... [{len(text) - _BLOCK_CHARS} chars cut]"
    return text


def render_for_summary(messages: Sequence[Message]) -> str:
    """The messages as plain text (no tool blocks, so any provider accepts it)."""
    lines = []
    for message in messages:
        parts = [p for p in (_render_block(b) for b in message.blocks) if p]
        lines.append(f"[{message.role}] " + "\n".join(parts))
    return "\n\n".join(lines)


def split_point(messages: Sequence[Message], keep_recent: int) -> int | None:
    """Index of the first kept message, or None if too little is old enough.

    The kept tail starts at an assistant message, so no tool result loses the
    call it answers and the summary (a user message) keeps roles alternating.
    """
    index = max(len(messages) - keep_recent, 0)
    while index > 0 and messages[index].role != "assistant":
        index -= 1
    return index if index >= 2 else None


@final
class Compactor:
    """Summarises the older part of a conversation with a model.

    The recent tail (at least `keep_recent` messages) is kept verbatim; the rest
    becomes one user message holding the summary. A model error or an empty
    summary is a failure (`compact` returns an error text); the caller's circuit
    breaker counts those.
    """

    def __init__(
        self, model: Model, *, keep_recent: int = 6, max_tokens: int = 2_048
    ) -> None:
        self.model = model
        """The model that writes summaries."""
        self.keep_recent = keep_recent
        """Messages kept verbatim at the end."""
        self.max_tokens = max_tokens
        """Cap on the summary's length."""

    async def compact(self, messages: Sequence[Message]) -> Compacted | str:
        """Return the compacted transcript, or why it could not be compacted.

        A checkpoint (one model call); cancellable.
        """
        cut = split_point(messages, self.keep_recent)
        if cut is None:
            return "nothing old enough to summarise (the recent tail is the whole conversation)"
        head, tail = messages[:cut], messages[cut:]
        request = ModelRequest(
            [
                Message(
                    "user",
                    render_for_summary(head) + "\n\nSummarise the conversation above.",
                )
            ],
            system=_SUMMARY_SYSTEM,
            max_tokens=self.max_tokens,
        )
        try:
            response = await self.model.complete(request)
        except ModelError as exc:
            return f"the summary call failed: {exc}"
        summary = response.text.strip()
        if not summary:
            return "the model returned an empty summary"
        compacted = (Message("user", _SUMMARY_PREFIX + summary), *tail)
        if transcript_problems(compacted):
            return "compaction would leave an invalid transcript"
        return Compacted(
            compacted,
            before=len(messages),
            after=len(compacted),
            usage=response.usage,
            model=response.model or self.model.name,
        )


def drop_oldest_rounds(
    messages: Sequence[Message],
    *,
    target_tokens: int | None,
    system: str | None = None,
    measure: Callable[[Sequence[Message]], int] | None = None,
) -> Compacted | str:
    """Drop the oldest droppable rounds until the estimate fits `target_tokens`.

    A droppable round is an assistant message and the user message that answers
    it, after the first user message and before the latest round; dropping whole
    rounds keeps every tool pair intact. With no target, half of the droppable
    rounds go. The first user message gets a note saying how much was dropped.
    `measure` sizes a transcript in tokens (default: `estimate_tokens` with
    `system`).
    """
    kept = list(messages)
    droppable = max((len(kept) - 3) // 2, 0)
    limit = droppable if target_tokens is not None else (droppable + 1) // 2
    size = measure if measure is not None else (lambda m: estimate_tokens(m, system))
    dropped = 0
    while dropped < limit and (target_tokens is None or size(kept) > target_tokens):
        if kept[1].role != "assistant" or kept[2].role != "user":
            break
        del kept[1:3]
        dropped += 1
    if dropped == 0:
        return "no droppable messages"
    note = Text(
        f"[{dropped * 2} older messages were dropped to fit the context window]"
    )
    kept[0] = Message("user", (*kept[0].blocks, note))
    if transcript_problems(kept):
        return "dropping messages would leave an invalid transcript"
    return Compacted(tuple(kept), before=len(messages), after=len(kept))
