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
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, final

import anyio

from ..messages import ToolCall

if TYPE_CHECKING:
    from ..scheduling import ToolStream
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


@final
class EagerBatch:
    """The early-start side of one model call.

    Loop thread only; only `settle` and `close` await.

    Args:
        open_stream: Opens the Dispatcher's streaming batch (an async context manager).
        eligible: Whether a response's first call may start early (the gate's
            parallel-ok); if not, the prefix rule holds back every call anyway.
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
        """The attempt is void (a retry or a truncated response): discard its early calls."""
        self._disarm()
        current = self._current
        if current is not None:
            if current.stream is not None:
                current.stream.discard()
            current.release.set()
        self._current = None
        self._pending = []
        self._first = True

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
