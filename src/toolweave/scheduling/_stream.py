"""ToolStream: the streaming seam — feed calls while the model's response streams."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import final

from .._exceptions import UsageError
from ..messages import ToolCall, ToolResult
from ._batch import Batch
from ._leftovers import finish_batch, harvest

__all__ = ["Dispatch", "SettledCall", "ToolStream"]

Dispatch = Callable[[list[ToolCall]], Awaitable[list[ToolResult]]]
"""How a deferred stream's calls are run at `harvest`: as one dispatch."""


@dataclass(frozen=True, slots=True)
class SettledCall:
    """One call of a stream that the batch answered, as it was answered.

    What `ToolStream.answered` reports of a discarded attempt: the calls whose
    `on_started` / `on_completed` fired, with the result `on_completed` got.
    """

    call: ToolCall
    """The call."""
    result: ToolResult
    """Its result: the tool's, or a synthetic one saying it was cut or not run."""
    ran: bool
    """The call entered its runner: it ran to its end, or was cut while running
    (then `result` says its effects are unknown). False: it never started."""


@final
class ToolStream:
    """Calls of one streamed response, fed as each tool_use block completes.

    Obtain one from `Dispatcher.open_stream`. `submit` each call in stream order;
    SAFE calls may start at once. `finish` when the response is final, then
    `harvest` the results in call order — the same results and the same
    `on_started` order as `Dispatcher.dispatch` on the same calls. If the attempt
    is retried or truncated, `discard` it: eager CANCEL calls are cancelled, BLOCK
    calls run to their end, and nothing is harvested; once they settled (the
    `open_stream` block has exited) `answered` says what each started call did,
    since it did it whatever became of its response.

    Loop affinity: `submit`, `finish` and `discard` are synchronous and must be
    called from the event loop's thread; none of them blocks.
    """

    def __init__(self, batch: Batch | None, dispatch: Dispatch | None) -> None:
        self._batch = batch
        self._dispatch = dispatch
        self._calls: list[ToolCall] = []
        self.harvested = False
        """True once `harvest` returned."""
        self.discarded = False
        """True once `discard` was called."""

    @classmethod
    def live(cls, batch: Batch) -> ToolStream:
        """A stream whose SAFE calls start as they arrive, in `batch`."""
        return cls(batch, None)

    @classmethod
    def deferred(cls, dispatch: Dispatch) -> ToolStream:
        """A stream that only collects calls and hands them to `dispatch` at `harvest`."""
        return cls(None, dispatch)

    @property
    def calls(self) -> list[ToolCall]:
        """The calls submitted so far."""
        return list(self._calls)

    def submit(self, call: ToolCall) -> None:
        """Add the next call of the response. Never blocks.

        Raises:
            UsageError: after `finish`, `discard` or `harvest`.
        """
        if self.discarded or self.harvested or (self._batch and self._batch.final):
            raise UsageError("submit() after the stream was finished or discarded")
        self._calls.append(call)
        if self._batch is not None:
            self._batch.submit(call)

    def finish(self) -> None:
        """The response is final: calls held back may now be scheduled."""
        if self._batch is not None:
            self._batch.finish()

    @property
    def started(self) -> bool:
        """True once some call was admitted or answered (its events were emitted)."""
        return self._batch is not None and self._batch.touched

    def discard(self) -> None:
        """Throw this attempt away (a retry or a truncated response). Idempotent.

        Calls not started never will be; a running CANCEL call is cancelled, a
        BLOCK call runs to its end. Each started call still gets its result
        (through `on_completed`), and `answered` keeps it.
        """
        self.discarded = True
        if self._batch is not None:
            self._batch.discard()

    def answered(self) -> list[SettledCall]:
        """The calls answered so far, in call order, each with its result.

        Of a discarded stream, read it once the `open_stream` block has exited
        (every started call settled): exactly the calls whose `on_started` or
        `on_completed` fired. Never blocks.
        """
        batch = self._batch
        if batch is None:
            return []
        return [
            SettledCall(record.call, record.result, record.ran)
            for record in batch.records
            if record.result is not None
        ]

    async def harvest(self) -> list[ToolResult]:
        """Finish the stream, wait for every call, and return results in call order.

        Raises:
            UsageError: if the stream was discarded or already harvested.
        """
        if self.discarded or self.harvested:
            raise UsageError("harvest() of a discarded or already harvested stream")
        if self._batch is None:
            assert self._dispatch is not None
            self.harvested = True
            return await self._dispatch(self._calls)
        self._batch.finish()
        await self._batch.settled.wait()
        await finish_batch(self._batch)
        self.harvested = True
        return harvest(self._batch)
