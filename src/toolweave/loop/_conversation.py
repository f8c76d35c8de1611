"""The run's transcript, with an O(1) estimate of its size in tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import final

from ..events import Event, MessageAppended, TranscriptReplaced
from ..messages import Message, ModelResponse, ToolCall
from ._transcript import block_chars, message_chars

__all__ = ["Conversation"]

_CHARS_PER_TOKEN = 4


@final
class Conversation:
    """The messages of a run, appended to as it goes.

    Knows roughly how many tokens the next request will hold: the size the
    provider reported for the last response (input, cached and output tokens)
    plus an estimate (characters / 4) of what was appended since. Every update
    is O(size of the change), so long runs do not slow down.

    Every change after construction is reported through `emit`, synchronously
    and before the mutating method returns: `MessageAppended` per appended
    message, `TranscriptReplaced` per replacement. The initial `messages` (a
    resumed run's history) are not reported. Event-loop thread only.
    """

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        emit: Callable[[Event], None] | None = None,
    ) -> None:
        self._messages: list[Message] = []
        self._chars = 0
        self._reported = 0
        self._chars_since_report = 0
        self._emit: Callable[[Event], None] | None = None
        self.extend(messages)
        self._emit = emit

    @property
    def messages(self) -> Sequence[Message]:
        """The transcript (a live view: do not mutate)."""
        return self._messages

    def snapshot(self) -> tuple[Message, ...]:
        """An immutable copy of the transcript."""
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def append(self, message: Message) -> None:
        """Add one message and report it (`MessageAppended`)."""
        size = message_chars(message)
        self._messages.append(message)
        self._chars += size
        self._chars_since_report += size
        if self._emit is not None:
            self._emit(MessageAppended(message, len(self._messages) - 1))

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages in order."""
        for message in messages:
            self.append(message)

    def replace(self, messages: Sequence[Message], *, reason: str) -> None:
        """Swap the whole transcript (after compaction) and report it once.

        The size is estimated anew. One `TranscriptReplaced(messages, reason)`
        is emitted, no `MessageAppended`.
        """
        emit, self._emit = self._emit, None
        self._messages = []
        self._chars = 0
        self._reported = 0
        self._chars_since_report = 0
        try:
            self.extend(messages)
        finally:
            self._emit = emit
        if emit is not None:
            emit(TranscriptReplaced(tuple(messages), reason))

    def open_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the last message if it is an assistant's (not yet answered)."""
        if self._messages and self._messages[-1].role == "assistant":
            return self._messages[-1].tool_calls
        return ()

    def note_response(self, response: ModelResponse) -> None:
        """Remember the context size the provider reported for `response`.

        Call it before the response's message is appended: the report already
        counts the response's output, so that message is not counted twice.
        """
        reported = response.usage.total_tokens
        if reported > 0:
            self._reported = reported
            self._chars_since_report = -sum(map(block_chars, response.content))

    def context_tokens(self) -> int:
        """Estimated tokens of the next request's messages."""
        if self._reported:
            return self._reported + self._chars_since_report // _CHARS_PER_TOKEN
        return self._chars // _CHARS_PER_TOKEN

    def last_assistant_text(self) -> str:
        """The text of the latest assistant message ('' if none)."""
        for message in reversed(self._messages):
            if message.role == "assistant":
                return message.text
        return ""
