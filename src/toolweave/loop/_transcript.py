"""Transcript rules: what a provider accepts, truncation markers, size estimates."""

from __future__ import annotations

from collections.abc import Sequence

from .._exceptions import InternalError
from ..messages import Image, Message, Text, Thinking, ToolCall, ToolResult
from ._tokens import messages_tokens

__all__ = [
    "TRUNCATION_MARKER",
    "block_chars",
    "estimate_tokens",
    "message_chars",
    "transcript_problems",
    "validate_transcript",
]

TRUNCATION_MARKER = "[System: response truncated at max_tokens]"
"""Appended to a final answer that was cut at the output-token limit."""


def _pairing_problems(index: int, message: Message, nxt: Message | None) -> list[str]:
    calls = message.tool_calls
    if not calls:
        return []
    if nxt is None or nxt.role != "user":
        return [
            f"message {index}: tool calls {[c.id for c in calls]} are never answered"
        ]
    answered = [r.call_id for r in nxt.tool_results]
    expected = [c.id for c in calls]
    if answered != expected:
        return [
            f"message {index + 1}: tool results {answered} do not answer the calls"
            f" {expected} one for one, in order"
        ]
    return []


def transcript_problems(messages: Sequence[Message]) -> list[str]:
    """Everything that would make a provider reject `messages` on resume.

    The rules: the first message is from the user; an assistant's tool calls
    are answered by the next message, a user message whose tool results match
    them one for one and in order; a tool result appears only right after the
    calls it answers. An empty list means valid. Repeated call ids are valid:
    models repeat them, a result answers the call at its position, and the
    provider converters make ids unique on the wire (`unique_call_ids`).
    """
    problems: list[str] = []
    if messages and messages[0].role != "user":
        problems.append("message 0: the transcript must start with a user message")
    for index, message in enumerate(messages):
        nxt = messages[index + 1] if index + 1 < len(messages) else None
        if message.role == "assistant":
            problems.extend(_pairing_problems(index, message, nxt))
            if any(isinstance(b, ToolResult) for b in message.blocks):
                problems.append(
                    f"message {index}: an assistant message holds a tool result"
                )
        else:
            prev = messages[index - 1] if index else None
            if message.tool_results and (prev is None or prev.role != "assistant"):
                problems.append(
                    f"message {index}: tool results without preceding calls"
                )
            if any(isinstance(b, ToolCall | Thinking) for b in message.blocks):
                problems.append(
                    f"message {index}: a user message holds assistant blocks"
                )
    return problems


def validate_transcript(messages: Sequence[Message]) -> None:
    """Raise InternalError naming every problem `transcript_problems` finds."""
    problems = transcript_problems(messages)
    if problems:
        raise InternalError("invalid transcript: " + "; ".join(problems))


def block_chars(block: object) -> int:
    """A cheap size measure of one block, in characters."""
    if isinstance(block, Text | Thinking):
        return len(block.text)
    if isinstance(block, ToolCall):
        return len(block.name) + len(str(block.input)) + 16
    if isinstance(block, ToolResult):
        return len(block.text) + 16
    if isinstance(block, Image):
        return 4_000  # images are billed by size; a flat guess keeps estimates cheap
    return 0


def message_chars(message: Message) -> int:
    """A cheap size measure of one message, in characters."""
    if isinstance(message.content, str):
        return len(message.content)
    return sum(block_chars(b) for b in message.content)


def estimate_tokens(messages: Sequence[Message], system: str | None = None) -> int:
    """A script-aware token estimate for when the provider has not said (`text_tokens`)."""
    return messages_tokens(messages, system)
