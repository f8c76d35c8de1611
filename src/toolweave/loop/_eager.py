"""EagerBatch: start a response's early tool calls when — and only when — it can matter.

Streaming overlap starts SAFE calls while the response still
streams. On one event loop a started call can only run while the loop's task
*waits* for the model; if the rest of the response is already buffered, the
call could not have run any earlier than after the response. So the
Dispatcher's streaming batch is opened at the first moment the loop's task
waits after an eligible first call (a "soon" callback), never before: a
response that arrives in one piece costs a plain dispatch, one that streams on
gets its SAFE calls started at the earliest moment they could run.

The batch is owned by a helper task in the run's task group, so its task group
never straddles the loop's cancel scopes.

An attempt that is thrown away (a retry: `restart`; a final response cut at
``max_tokens`` or refused: `void`) keeps what its started calls did: they ran
whatever became of the response, so their results are handed back (`void`,
`discarded`) for the loop to tell the model, never dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, final

import anyio

from ..messages import ToolCall, ToolResult

if TYPE_CHECKING:
    from ..scheduling import SettledCall, ToolStream
    from ._soon import Canceller, Schedule

__all__ = ["EagerBatch"]

logger = logging.getLogger("toolweave.loop")

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]
"""Starts a job as a task of the run's task group."""


class _Helper:
    """The task that owns one attempt's streaming batch."""

    __slots__ = ("exited", "opened", "release", "stream")

    def __init__(self) -> None:
        self.stream: ToolStream | None = None
        self.opened = anyio.Event()
        self.release = anyio.Event()
        self.exited = anyio.Event()

    async def answered(self) -> list[SettledCall]:
        """The calls its batch answered, once every started one settled."""
        await self.exited.wait()
        return [] if self.stream is None else self.stream.answered()


@final
class EagerBatch:
    """The early-start side of one model call.

    Loop thread only; only `settle`, `void`, `discarded` and `close` await.

    Args:
        open_stream: Opens the Dispatcher's streaming batch (an async context manager).
        eligible: Whether a response's first call may start early
            (`starts_early`); if not, the prefix rule holds back every call anyway.
        warm: Awaited with each call before it is offered: the tool's costly
            declaration work (a shell parse) off the loop (`scheduling.warm`).
        spawn: Starts a helper task in the run's task group.
        schedule: The event loop's "soon" (`soon_scheduler`).
    """

    def __init__(
        self,
        *,
        open_stream: Callable[[], AbstractAsyncContextManager[ToolStream]],
        eligible: Callable[[ToolCall], bool],
        warm: Callable[[ToolCall], Awaitable[None]],
        spawn: Spawn,
        schedule: Schedule,
    ) -> None:
        self._open_stream = open_stream
        self._eligible = eligible
        self.warm = warm
        self._spawn = spawn
        self._schedule = schedule
        self._pending: list[ToolCall] = []
        self._helpers: list[_Helper] = []
        self._dead: list[_Helper] = []  # batches of attempts a retry threw away
        self._current: _Helper | None = None
        self._armed: Canceller | None = None
        self._first = True

    def offer(self, call: ToolCall) -> None:
        """A complete call arrived in the stream (in call order)."""
        current = self._current
        if current is not None and current.stream is not None:
            current.stream.submit(call)
            return
        self._pending.append(call)
        if self._first:
            self._first = False
            if self._eligible(call):
                self._armed = self._schedule(self._fire)

    def _fire(self) -> None:
        """The loop's task waits for the model: start the batch now."""
        self._armed = None
        helper = self._current = _Helper()
        self._helpers.append(helper)
        self._spawn(partial(self._host, helper))

    async def _host(self, helper: _Helper) -> None:
        try:
            async with self._open_stream() as stream:
                helper.stream = stream
                if helper is self._current:
                    for call in self._pending:
                        stream.submit(call)
                    self._pending.clear()
                else:  # the attempt died before its batch opened
                    stream.discard()
                helper.opened.set()
                await helper.release.wait()
        except Exception:
            logger.exception("could not open the streaming batch")
            helper.stream = None
        finally:
            helper.opened.set()
            helper.exited.set()

    def _disarm(self) -> None:
        if self._armed is not None:
            self._armed()
            self._armed = None

    def restart(self) -> None:
        """A retry voids the attempt: discard its batch; `discarded` reports it."""
        helper = self._drop_current()
        if helper is not None:
            self._dead.append(helper)

    async def void(self) -> dict[str, ToolResult]:
        """The final response is void (cut at max_tokens, refused): discard its batch.

        Waits until its started calls settled (CANCEL ones are cancelled, BLOCK
        ones run to their end) and returns their results by `ToolCall.key`: the
        calls `on_started`/`on_completed` reported. A checkpoint only when a
        batch was started.
        """
        helper = self._drop_current()
        if helper is None:
            return {}
        return {settled.call.key: settled.result for settled in await helper.answered()}

    async def discarded(self) -> list[SettledCall]:
        """Calls of retried attempts that ran, once they settled; each reported once.

        A checkpoint only when a retry threw a started batch away.
        """
        dead, self._dead = self._dead, []
        ran: list[SettledCall] = []
        for helper in dead:
            ran.extend(s for s in await helper.answered() if s.ran)
        return ran

    def _drop_current(self) -> _Helper | None:
        """Discard the current attempt's batch (nothing is harvested); its helper."""
        self._disarm()
        current = self._current
        if current is not None:
            if current.stream is not None:
                current.stream.discard()
            current.release.set()
        self._current = None
        self._pending = []
        self._first = True
        return current

    async def settle(self) -> ToolStream | None:
        """The response is final: the batch holding its calls, or None to dispatch them.

        A checkpoint only when a batch was started.
        """
        self._disarm()
        current = self._current
        if current is None:
            return None
        await current.opened.wait()
        return current.stream

    async def close(self) -> None:
        """Release every helper (discarding what was not harvested) and wait for them."""
        self._disarm()
        for helper in self._helpers:
            stream = helper.stream
            if stream is not None and not stream.harvested:
                stream.discard()
            helper.release.set()
        for helper in self._helpers:
            await helper.exited.wait()
