"""Calls started early from a response that came to nothing: told, never dropped.

With streaming overlap a call may start before its response is final (`_eager`).
The response may still come to nothing as a batch, and a call started from it has
run all the same, so the record says what each did:

* **cut at max_tokens, or refused**: the response stays in the transcript; each
  call that had started keeps the result its events reported (it ran, or was cut
  while running: effects unknown, or never got to run), the others are answered
  "not run" (`answer_void`);
* **halted while it streamed** (an interrupt, a spent budget): if a call had
  started, the response as far as it streamed is recorded and its batch is
  answered as an interrupted batch is (CANCEL calls cut, BLOCK calls finished,
  the rest not run); if none had, nothing happened and nothing is recorded
  (`halted`);
* **broken off mid-stream and retried** by the gateway: that attempt is in no
  transcript, so the calls of it that ran are told in the next user message, a
  note with what each returned (`gather`, `take_notes`). A run that ends before it
  sends one keeps them in its events and the session store, and says so in a
  `Warning` (`warn_undelivered`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, final

from ..events import Event
from ..events import Warning as WarningEvent
from ..messages import Message, ModelResponse, Text, ToolCall, ToolResult
from ..scheduling import results_of
from ._conversation import Conversation
from ._eager import EagerBatch
from ._tool_batch import ToolBatcher, discarded_calls_note, unanswered_call_result

__all__ = ["DiscardedCalls", "DiscardingLoop"]


class DiscardingLoop(Protocol):
    """What `DiscardedCalls` reads of its run (the `RunLoop`)."""

    @property
    def batcher(self) -> ToolBatcher:
        """The run's tool batches."""
        ...

    @property
    def conversation(self) -> Conversation:
        """The run's transcript."""
        ...

    @property
    def eager(self) -> EagerBatch | None:
        """The batch started while the response streamed, if any."""
        ...

    @property
    def emit(self) -> Callable[[Event], None]:
        """Hands an event to the run's listeners."""
        ...


@final
class DiscardedCalls:
    """The loop's side of early calls whose response was void. Loop task only."""

    def __init__(self, loop: DiscardingLoop) -> None:
        self._loop = loop
        self._notes: list[Text] = []

    async def gather(self) -> None:
        """Wait for the calls of retried attempts to settle; note those that ran.

        A checkpoint only when a retry threw a started batch away.
        """
        eager = self._loop.eager
        if eager is None:
            return
        note = discarded_calls_note(await eager.discarded())
        if note is not None:
            self._notes.append(note)

    def take_notes(self) -> list[Text]:
        """The notes not yet told: put them in the user message being built."""
        notes, self._notes = self._notes, []
        return notes

    async def answer_void(
        self, calls: tuple[ToolCall, ...], answer: Callable[[ToolCall], ToolResult]
    ) -> tuple[ToolResult, ...]:
        """Results for the calls of a final response that runs nothing.

        Discards the response's streaming batch and waits for the calls it
        started (a checkpoint then); those keep their results, the rest get
        `answer`'s.
        """
        loop = self._loop
        started = await loop.eager.void() if loop.eager is not None else {}
        await self.gather()
        return loop.batcher.answer_void(calls, started, answer)

    async def halted(self, response: ModelResponse) -> None:
        """The run was halted while (or just as) `response` streamed: record what ran.

        If the response's streaming batch started a call, the response (as far
        as it got) goes into the transcript and the batch is harvested, as the
        halt left it: every call answered, in call order. Otherwise nothing is
        recorded. A checkpoint when a batch was started.
        """
        loop = self._loop
        stream = await loop.eager.settle() if loop.eager is not None else None
        await self.gather()
        if stream is None or not stream.started:
            return
        calls = response.tool_calls
        loop.conversation.append(response.to_message())
        known = stream.calls
        if [c.key for c in known] != [c.key for c in calls[: len(known)]]:
            # Not expected: the stream holds the response's calls in order.
            results = tuple(
                unanswered_call_result(c, "the run was halted") for c in calls
            )
        else:
            for call in calls[len(known) :]:  # arrived as the halt came
                stream.submit(call)
            try:
                results = await loop.batcher.run(calls, stream)
            except (KeyboardInterrupt, SystemExit) as exc:
                answered = results_of(exc)  # a tool raised it: record, then let go
                if answered is not None:
                    loop.conversation.append(Message("user", tuple(answered)))
                raise
        loop.conversation.append(Message("user", (*results, *self.take_notes())))

    def warn_undelivered(self) -> None:
        """The run ends with notes the model was never sent: say so in a Warning."""
        if not self._notes:
            return
        self._loop.emit(
            WarningEvent(
                "calls of a model response that was retried had run, and the run"
                " ended before the model was told (the session store keeps them):\n"
                + "\n".join(note.text for note in self.take_notes())
            )
        )
