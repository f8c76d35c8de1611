"""AgentRun: the handle of a run in progress — its events, interrupts and steering."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._exceptions import UsageError
from .._native.cancel import sole_fatal
from ..events import CompletionReason, Event
from ._result import RunResult, finished_event

if TYPE_CHECKING:
    from ..scheduling import Dispatcher
    from ._loop import RunLoop

__all__ = ["BUDGET_GRACE", "AgentRun"]

BUDGET_GRACE = 5.0
"""Seconds past the wall-clock deadline before what still holds the run is interrupted."""


@final
class AgentRun:
    """A run in progress, from `Agent.open_run`.

    `events()` yields every event once, in order, ending with `RunFinished`.
    `interrupt()` and `send()` steer the run; call them from the run's event
    loop thread (any task). Neither blocks.
    """

    def __init__(
        self,
        loop: RunLoop,
        receive: MemoryObjectReceiveStream[Event],
    ) -> None:
        self._loop = loop
        self._receive = receive
        self._consumed = False
        self._done = anyio.Event()
        self.result: RunResult | None = None
        """The result, once the run ended."""
        self.fatal: BaseException | None = None
        """A tool's KeyboardInterrupt/SystemExit: `Agent.open_run` re-raises it as itself."""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._loop.run_id

    @property
    def done(self) -> bool:
        """True once the run ended."""
        return self._done.is_set()

    def interrupt(self) -> None:
        """End the run as INTERRUPTED as soon as it is safe.

        A model call in flight is abandoned; the current tool batch ends per each
        tool's Interrupt behaviour (CANCEL calls stop, BLOCK calls finish) and
        calls that never started get synthetic results, so every tool call in the
        transcript is answered. Idempotent.
        """
        self._loop.control.stop(CompletionReason.INTERRUPTED, "interrupted by the user")

    def send(self, text: str) -> None:
        """Queue a user message; it reaches the model after the current tool batch.

        If the model gives a final answer while messages are queued, they are
        sent and the run continues instead of completing.
        """
        self._loop.control.queue.append(text)

    async def events(self) -> AsyncGenerator[Event, None]:
        """Every event of the run, in order; the last is `RunFinished`. One consumer only."""
        if self._consumed:
            raise UsageError("AgentRun.events() can be iterated only once")
        self._consumed = True
        receive = self._receive
        while True:
            try:
                event = receive.receive_nowait()
            except anyio.WouldBlock:
                try:
                    event = await receive.receive()
                except anyio.EndOfStream:
                    return
            except anyio.EndOfStream:
                return
            yield event

    async def wait(self) -> RunResult:
        """Wait for the run to end and return its result (events need not be consumed)."""
        await self._done.wait()
        assert self.result is not None  # set before `done`, on every path
        return self.result

    async def _drive(
        self, send: MemoryObjectSendStream[Event], dispatcher: Dispatcher | None
    ) -> None:
        """Run the loop (in its own task), then close the event stream.

        `dispatcher` is closed afterwards when the run owns it.
        """
        loop = self._loop
        try:
            with send:
                try:
                    await self._drive_with_deadline()
                finally:
                    if loop.result is None:  # cancelled from outside: end honestly
                        loop.result = _cancelled(loop, self.fatal)
                        loop.emit(finished_event(loop.result))  # recorded, if recorded
                    self.result = loop.result
        finally:
            self._done.set()
            if dispatcher is not None:
                with anyio.CancelScope(shield=True):
                    await dispatcher.aclose()

    async def _drive_with_deadline(self) -> None:
        """Drive the loop; at the wall-clock deadline, end it (a bound, not an interrupt).

        At the deadline the run expires: a model call in flight is abandoned
        and the run ends BUDGET_EXCEEDED at its next step, while the runner's
        own deadline cuts running tool calls as at a timeout and answers the
        rest "not run" (issue 24, item 9). Whatever still holds the run
        `BUDGET_GRACE` seconds later (a readiness wait, hooks past their
        grace) is interrupted as a user interrupt would.
        """
        loop = self._loop
        deadline = loop.budget.deadline
        if deadline is None:
            await self._drive_capturing_fatal()
            return
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                detail = f"wall-clock budget of {loop.cfg.max_wall_clock:g} s spent"
                await anyio.sleep_until(deadline)
                loop.control.expire(CompletionReason.BUDGET_EXCEEDED, detail)
                await anyio.sleep_until(deadline + BUDGET_GRACE)
                loop.control.stop(CompletionReason.BUDGET_EXCEEDED, detail)

            tg.start_soon(watch)
            await self._drive_capturing_fatal()
            tg.cancel_scope.cancel()

    async def _drive_capturing_fatal(self) -> None:
        """Drive the loop; keep a tool's KeyboardInterrupt/SystemExit for the caller.

        Raised here it would hit this task's task group (a BaseExceptionGroup on
        trio) or abort asyncio's event loop; `Agent.open_run` re-raises it in the
        caller's task once the run ended and its transcript is complete.
        """
        try:
            await self._loop.drive()
        except BaseException as exc:
            fatal = sole_fatal(exc)  # unwrapped from the loop's own task group
            if fatal is None:
                raise
            self.fatal = fatal


def _cancelled(loop: RunLoop, fatal: BaseException | None) -> RunResult:
    """The result of a run cancelled from outside (or ended by a tool's `fatal`).

    Calls it left open are answered.
    """
    why = (
        f"a tool raised {type(fatal).__name__}"
        if fatal is not None
        else "the run was cancelled"
    )
    loop.close_open_calls(why)
    costs = loop.costs
    return RunResult(
        loop.conversation.last_assistant_text(),
        CompletionReason.INTERRUPTED,
        messages=loop.conversation.snapshot(),
        usage=costs.usage,
        model_usage=costs.by_model,
        cost=costs.cost,
        iterations=loop.iteration,
        detail=why if fatal is not None else "the run was cancelled from outside",
        run_id=loop.run_id,
    )
