"""The run's transcript, with an O(1) estimate of its size in tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import final

from ..events import Event, MessageAppended, TranscriptReplaced
from ..messages import Message, ModelResponse, ToolCall
from ._tokens import block_tokens, message_tokens

__all__ = ["Conversation"]

_MAX_SCALE = 4.0
"""The most the provider's count may scale the estimate up (a gateway's odd report)."""
_MIN_LEARN = 512
"""Estimated tokens of added content below which a report teaches nothing (noise)."""
_MIN_LEARN_WHOLE = 2_048
"""The same for a refused request counted whole: the provider's hidden framing
(a tool-use system prompt of a few hundred tokens) must not pass for a rate."""


@final
class Conversation:
    """The messages of a run, appended to as it goes.

    Knows roughly how many tokens the next request will hold: the size the
    provider reported for the last response (input, cached and output tokens)
    plus a script-aware estimate (`toolweave.loop._tokens`) of what was
    appended since. When the provider counted more than estimated for what
    was added between two of its counts (or for a large request it refused),
    later estimates are scaled up by that ratio (`scale`, never below 1): a
    Korean or code-heavy session learns its own rate. Before any report
    (and after the transcript was replaced) the whole transcript is estimated,
    plus `overhead_tokens` (the system prompt and tool definitions, which the
    provider's report already holds). Every update is O(size of the change),
    so long runs do not slow down.

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
        self._tokens = 0
        self._reported = 0
        self._tokens_since_report = 0
        self._sent: tuple[int, int] = (0, 0)  # (provider-counted base, estimated rest)
        self.scale = 1.0
        """How much the provider counted over the estimate (>= 1; 1 until it has)."""
        self.overhead_tokens = 0
        """Estimated tokens of the system prompt and tool definitions (set by the loop)."""
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
        size = message_tokens(message)
        self._messages.append(message)
        self._tokens += size
        self._tokens_since_report += size
        if self._emit is not None:
            self._emit(MessageAppended(message, len(self._messages) - 1))

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages in order."""
        for message in messages:
            self.append(message)

    def replace(
        self, messages: Sequence[Message], *, reason: str, keep_report: bool = False
    ) -> None:
        """Swap the whole transcript (after compaction) and report it once.

        The size is estimated anew; with `keep_report` (the same messages, some
        contents shortened: cleared tool results) the provider's last count is
        kept and the estimated difference taken off it. One
        `TranscriptReplaced(messages, reason)` is emitted, no `MessageAppended`.
        """
        emit, self._emit = self._emit, None
        before = self._tokens
        reported, since = self._reported, self._tokens_since_report
        self._messages = []
        self._tokens = 0
        self._reported = 0
        self._tokens_since_report = 0
        try:
            self.extend(messages)
        finally:
            self._emit = emit
        if keep_report and reported:
            self._reported = reported
            self._tokens_since_report = since + self._tokens - before
        if emit is not None:
            emit(TranscriptReplaced(tuple(messages), reason))

    def open_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the last message if it is an assistant's (not yet answered)."""
        if self._messages and self._messages[-1].role == "assistant":
            return self._messages[-1].tool_calls
        return ()

    def note_sent(self) -> None:
        """Remember the estimate of the request about to be sent (to learn `scale`)."""
        if self._reported:
            self._sent = (self._reported, max(self._tokens_since_report, 0))
        else:
            self._sent = (0, self._tokens + self.overhead_tokens)

    def note_response(
        self, response: ModelResponse, *, window: int | None = None
    ) -> bool:
        """Remember the context size the provider reported for `response`.

        Call it before the response's message is appended: the report already
        counts the response's output, so that message is not counted twice.
        The input part of the report, against the estimate `note_sent` took of
        the same request, updates `scale`. A report that cannot be true is not
        used (returns False): more input or output tokens than the `window` of
        a request the provider accepted (a broken or hostile gateway's count).
        """
        usage = response.usage
        reported = usage.total_tokens
        if reported <= 0:
            return True
        if (
            window is not None
            and max(reported - usage.output_tokens, usage.output_tokens) > window
        ):
            self._sent = (0, 0)
            return False
        base, estimated = self._sent
        counted = reported - usage.output_tokens - base  # what the estimate stood for
        # only a difference against an earlier count: a first request's count
        # holds the provider's hidden framing, which is no rate
        if base > 0 and estimated >= _MIN_LEARN and counted > estimated:
            self.scale = min(max(self.scale, counted / estimated), _MAX_SCALE)
        self._sent = (0, 0)
        self._reported = reported
        self._tokens_since_report = -sum(map(block_tokens, response.content))
        return True

    def learn_refused(self, requested: int) -> None:
        """The provider refused the last request, saying it held `requested` tokens.

        Scales later estimates up as `note_response` does, so shrinking aims at
        the real size.
        """
        base, estimated = self._sent
        counted = requested - base
        least = _MIN_LEARN if base > 0 else _MIN_LEARN_WHOLE
        if estimated >= least and counted > estimated:
            self.scale = min(max(self.scale, counted / estimated), _MAX_SCALE)

    def context_tokens(self) -> int:
        """Estimated tokens of the next request (messages, system prompt, tools).

        The provider's last count plus the scaled estimate of what came since;
        with no count, the scaled estimate of everything.
        """
        if self._reported:
            added = round(self._tokens_since_report * self.scale)
            return max(self._reported + added, 0)
        return round((self._tokens + self.overhead_tokens) * self.scale)

    def last_assistant_text(self) -> str:
        """The text of the latest assistant message ('' if none)."""
        for message in reversed(self._messages):
            if message.role == "assistant":
                return message.text
        return ""
