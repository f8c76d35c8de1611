"""The run's transcript, with a lazy, O(change) estimate of its size in tokens."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import final

from ..events import Event, MessageAppended, TranscriptReplaced
from ..messages import AssistantBlock, Message, ModelResponse, ToolCall
from ._tokens import OVERHEAD_PER_BLOCK, message_tokens

__all__ = ["Conversation"]

_MAX_SCALE = 4.0
"""The most the provider's count may scale the estimate up (a gateway's odd report)."""
_MIN_LEARN = 512
"""Estimated tokens of added content below which a report teaches nothing (noise)."""
_MIN_LEARN_WHOLE = 2_048
"""The same for a refused request counted whole: the provider's hidden framing
(a tool-use system prompt of a few hundred tokens) must not pass for a rate."""


@final
class _Since:
    """Where the part of the transcript the provider has not counted begins.

    `at`: the first message after its count; `offset`: estimated tokens to add
    (a transcript shortened under a kept count); `credit`: the content of the
    response the count already holds (its message, appended at `at`, counts
    only its framing). The credit is worked out once, on first need.
    """

    __slots__ = ("_credit", "_credit_tokens", "at", "offset")

    def __init__(
        self, at: int, *, offset: int = 0, credit: tuple[AssistantBlock, ...] = ()
    ) -> None:
        self.at = at
        self.offset = offset
        self._credit = credit
        self._credit_tokens: int | None = None if credit else 0

    def credit_tokens(self, conversation: Conversation) -> int:
        """Estimated tokens of the response the provider's count holds."""
        if self._credit_tokens is None:
            self._credit_tokens = conversation.credit_of(self.at, self._credit)
        return self._credit_tokens


@dataclass(frozen=True, slots=True)
class _Sent:
    """The request last sent, to be estimated when a report or refusal needs it."""

    base: int
    """The provider's count it built on (0 = none)."""
    since: _Since | None
    """What came after that count (None with no count)."""
    length: int
    """How many messages it held."""
    fixed: int | None = None
    """Its estimate, once worked out before the transcript was replaced."""


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
    provider's report already holds).

    Lazy: nothing is estimated until something reads the figure
    (`context_tokens`, `scale`, `overhead_tokens`, `learn_refused`, a
    `replace` that keeps the provider's count). A run with no known window, no
    context budget and no compaction never estimates a block. Each message is
    estimated at most once (the figures are kept beside it); what the
    provider's reports teach about `scale` is kept as the reports come and
    worked out on first read, so a figure read late equals one read at every
    step. Every update is O(size of the change), so long runs do not slow down.

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
        self._messages: list[Message] = list(messages)
        self._upto: list[int] = [0]
        """``_upto[i]``: estimated tokens of the first i messages (as far as estimated)."""
        self._reported = 0
        self._since = _Since(0)
        self._sent: _Sent | None = None
        self._lessons: list[tuple[int, _Sent]] = []
        """(tokens the provider counted, the request's estimate) not yet learned from."""
        self._scale = 1.0
        self._overhead: int | None = 0
        self._overhead_source: Callable[[], int] | None = None
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
        """Add one message and report it (`MessageAppended`). Estimates nothing."""
        self._messages.append(message)
        if self._emit is not None:
            self._emit(MessageAppended(message, len(self._messages) - 1))

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages in order."""
        for message in messages:
            self.append(message)

    # -- the estimate, on first need ------------------------------------------------

    @property
    def overhead_tokens(self) -> int:
        """Estimated tokens of the system prompt and tool definitions (see `set_overhead`)."""
        if self._overhead is None:
            assert self._overhead_source is not None
            self._overhead = self._overhead_source()
        return self._overhead

    @overhead_tokens.setter
    def overhead_tokens(self, tokens: int) -> None:
        self._overhead, self._overhead_source = tokens, None

    def set_overhead(self, source: Callable[[], int]) -> None:
        """Name how to estimate the overhead; called once, on first need."""
        self._overhead, self._overhead_source = None, source

    @property
    def scale(self) -> float:
        """How much the provider counted over the estimate (>= 1; 1 until it has)."""
        self._learn()
        return self._scale

    def _tokens(self, length: int) -> int:
        """Estimated tokens of the first `length` messages (each estimated once)."""
        upto, messages = self._upto, self._messages
        for index in range(len(upto) - 1, length):
            upto.append(upto[-1] + message_tokens(messages[index]))
        return upto[length]

    def credit_of(self, at: int, content: tuple[AssistantBlock, ...]) -> int:
        """Estimated tokens of a counted response's `content`, its message at `at`.

        The message's own figure less its framing when the response was
        appended there (the usual case: no block is estimated twice), else
        the content estimated on its own.
        """
        messages = self._messages
        if at < len(messages):
            message = messages[at]
            held = message.content
            if message.role == "assistant" and (held is content or held == content):
                return self._tokens(at + 1) - self._tokens(at) - OVERHEAD_PER_BLOCK
        blocks = Message("assistant", content)
        return message_tokens(blocks) - OVERHEAD_PER_BLOCK

    def _added(self, since: _Since, length: int) -> int:
        """Estimated tokens of messages `since.at` .. `length` the provider did not count."""
        return (
            self._tokens(length)
            - self._tokens(since.at)
            + since.offset
            - since.credit_tokens(self)
        )

    def _estimate(self, sent: _Sent) -> int:
        """The estimate of request `sent` as `note_sent` would have taken it."""
        if sent.fixed is not None:
            return sent.fixed
        if sent.since is not None:
            return max(self._added(sent.since, sent.length), 0)
        return self._tokens(sent.length) + self.overhead_tokens

    def _learn(self) -> None:
        """Learn `scale` from the reports kept since it was last read."""
        lessons, self._lessons = self._lessons, []
        for counted, sent in lessons:
            self._raise_scale(counted, self._estimate(sent), _MIN_LEARN)

    def _raise_scale(self, counted: int, estimated: int, least: int) -> None:
        if estimated >= least and counted > estimated:
            self._scale = min(max(self._scale, counted / estimated), _MAX_SCALE)

    # -- changes -----------------------------------------------------------------------

    def replace(
        self, messages: Sequence[Message], *, reason: str, keep_report: bool = False
    ) -> None:
        """Swap the whole transcript (after compaction) and report it once.

        The size is estimated anew; with `keep_report` (the same messages, some
        contents shortened: cleared tool results) the provider's last count is
        kept and the estimated difference taken off it. What earlier reports
        teach is learned first (it is about the old messages). One
        `TranscriptReplaced(messages, reason)` is emitted, no `MessageAppended`.
        """
        self._learn()
        length = len(self._messages)
        sent = self._sent
        if sent is not None and sent.fixed is None:
            self._sent = _Sent(sent.base, None, 0, fixed=self._estimate(sent))
        offset = None
        if keep_report and self._reported:
            offset = self._added(self._since, length) - self._tokens(length)
        self._messages = list(messages)
        self._upto = [0]
        if offset is None:
            self._reported = 0
            self._since = _Since(0)
        else:
            self._since = _Since(0, offset=offset)
        if self._emit is not None:
            self._emit(TranscriptReplaced(tuple(messages), reason))

    def open_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the last message if it is an assistant's (not yet answered)."""
        if self._messages and self._messages[-1].role == "assistant":
            return self._messages[-1].tool_calls
        return ()

    # -- the provider's counts ------------------------------------------------------------

    def note_sent(self) -> None:
        """Remember the request about to be sent (to learn `scale`); estimates nothing."""
        since = self._since if self._reported else None
        self._sent = _Sent(self._reported, since, len(self._messages))

    def note_response(
        self, response: ModelResponse, *, window: int | None = None
    ) -> bool:
        """Remember the context size the provider reported for `response`.

        Call it before the response's message is appended: the report already
        counts the response's output, so that message counts only its framing
        (its blocks are not estimated twice). The input part of the report,
        against the estimate of the request `note_sent` marked, updates
        `scale` (when next read). A report that cannot be true is not used
        (returns False): more input or output tokens than the `window` of a
        request the provider accepted (a broken or hostile gateway's count).
        """
        usage = response.usage
        reported = usage.total_tokens
        if reported <= 0:
            return True
        sent, self._sent = self._sent, None
        if (
            window is not None
            and max(reported - usage.output_tokens, usage.output_tokens) > window
        ):
            return False
        if sent is not None and sent.base > 0:
            # only a difference against an earlier count: a first request's
            # count holds the provider's hidden framing, which is no rate
            counted = reported - usage.output_tokens - sent.base
            if counted > _MIN_LEARN:  # else no estimate it could exceed is learned from
                self._lessons.append((counted, sent))
        self._reported = reported
        self._since = _Since(len(self._messages), credit=tuple(response.content))
        return True

    def learn_refused(self, requested: int) -> None:
        """The provider refused the last request, saying it held `requested` tokens.

        Scales later estimates up as `note_response` does, so shrinking aims at
        the real size.
        """
        self._learn()
        sent = self._sent
        if sent is None:
            return
        least = _MIN_LEARN if sent.base > 0 else _MIN_LEARN_WHOLE
        self._raise_scale(requested - sent.base, self._estimate(sent), least)

    def context_tokens(self) -> int:
        """Estimated tokens of the next request (messages, system prompt, tools).

        The provider's last count plus the scaled estimate of what came since;
        with no count, the scaled estimate of everything. Estimates what was
        not estimated yet (each message once).
        """
        scale = self.scale
        length = len(self._messages)
        if self._reported:
            added = round(self._added(self._since, length) * scale)
            return max(self._reported + added, 0)
        return round((self._tokens(length) + self.overhead_tokens) * scale)

    def last_assistant_text(self) -> str:
        """The text of the latest assistant message ('' if none)."""
        for message in reversed(self._messages):
            if message.role == "assistant":
                return message.text
        return ""
