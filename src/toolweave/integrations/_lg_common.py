"""What `ScheduledToolNode` and `ScheduledToolMiddleware` share: values, errors, fan-out.

LangGraph's ``Send`` fan-out (``create_agent``, ``create_react_agent(version="v2")``)
runs each tool call of an AI message as a task of its own. `FanOut` finds the
`SendBatch` of the message a lone call belongs to, from the state the task is
given: the last AI message's ``tool_calls`` are the batch, a call's place in
them its key, and the calls no `ToolMessage` after that message answers yet
are the ones LangGraph sends.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar, final

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from . import _needs_langgraph  # noqa: F401  first: a missing framework names its extra

# isort: split
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt.tool_node import _handle_tool_error
from langgraph.runtime import ExecutionInfo
from langgraph.types import Command

from ..scheduling import InterruptToken
from ._blocking import run_blocking
from ._foreign import ForeignScheduler, Outcome, Raised
from ._send_batch import Seat, SendBatch, SendBatches

__all__ = [
    "INTERRUPT_KEY",
    "RESUMING_KEY",
    "FanOut",
    "LoopBridge",
    "Output",
    "SplitBatchWarning",
    "Unanswerable",
    "bridge_of",
    "describe",
    "error_message",
    "interrupt_of",
    "no_value",
    "run_bridged",
]

T = TypeVar("T")

INTERRUPT_KEY = "toolweave_interrupt"
"""Key in ``config["configurable"]`` for the run's `InterruptToken`."""

RESUMING_KEY = "__pregel_resuming"
"""LangGraph's ``CONFIG_KEY_RESUMING`` (private; the extra pins langgraph, and
tests/integrations/test_langgraph_fanout.py pins the key): set in a task's
config when its step is resumed, where the calls that finished before the
interrupt are not sent again."""

Output = ToolMessage | Command[Any] | list[ToolMessage | Command[Any]]


class SplitBatchWarning(UserWarning):
    """The node was handed one call it cannot place in a batch: it runs unordered."""


def describe(value: Output) -> str | Raised:
    """Text of a node output for toolweave's result; an error ToolMessage is Raised."""
    if isinstance(value, ToolMessage):
        content = value.content
        text = content if isinstance(content, str) else str(content)
        return Raised(text) if value.status == "error" else text
    if isinstance(value, list):
        parts = [describe(v) for v in value]
        return "\n".join(p.text if isinstance(p, Raised) else p for p in parts)
    return repr(value)


class Unanswerable(Exception):
    """Carries past the scheduler an error no setting answers (an invalid resume)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def error_message(call: ToolCall, exc: Exception) -> ToolMessage:
    """`ToolNode`'s error answer (``handle_tool_errors=True``'s words) for `exc`."""
    return ToolMessage(
        content=_handle_tool_error(exc, flag=True),
        name=call["name"],
        tool_call_id=call["id"],
        status="error",
    )


def no_value(call: ToolCall, outcome: Outcome[Output]) -> ToolMessage:
    """The error ToolMessage answering a call the node gave no value for: why."""
    return ToolMessage(
        content=outcome.result.text,
        name=call["name"],
        tool_call_id=call["id"],
        status="error",
    )


def interrupt_of(config: RunnableConfig) -> InterruptToken | None:
    """The run's `InterruptToken` (``config["configurable"][INTERRUPT_KEY]``), if any."""
    token = (config.get("configurable") or {}).get(INTERRUPT_KEY)
    if token is None or isinstance(token, InterruptToken):
        return token
    raise TypeError(
        f"config['configurable'][{INTERRUPT_KEY!r}] must be a toolweave"
        f" InterruptToken, not {type(token).__name__}"
    )


@final
class LoopBridge:
    """Carries the run's `InterruptToken` into private event loops, from any thread.

    The sync path runs a private event loop per batch (per call, under fan-out,
    each on a thread of its own), and an `InterruptToken` has one home loop, so
    the run's token is never handed to them: each loop gets a token of its own
    (`within`), which the run's sets, from whichever thread sets it. Made on a
    thread with no event loop (subscribing there gives the run's token no
    home); `close` it when the call is over.

    Never hangs on a loop that is ending: the loop leaves `within` only once no
    hand-over to it is under way (a hand-over holds the lock; the loop waits
    for it without blocking itself).
    """

    def __init__(self, token: InterruptToken) -> None:
        self._token = token
        self._lock = threading.Lock()
        self._loop: tuple[int, anyio.lowlevel.EventLoopToken, InterruptToken] | None = (
            None
        )
        self._unsubscribe = token.subscribe(self._on_set)

    def close(self) -> None:
        """Stop listening to the run's token."""
        self._unsubscribe()

    def _on_set(self) -> None:
        with self._lock:
            if self._loop is None:
                return  # no loop now: `within` sees the token set when it starts
            thread, loop, local = self._loop
            if thread == threading.get_ident():
                local.set()
            else:
                anyio.from_thread.run_sync(local.set, token=loop)

    async def within(self, fn: Callable[[InterruptToken], Awaitable[T]]) -> T:
        """``await fn(local)``, `local` set whenever the run's token is."""
        local = InterruptToken()
        with self._lock:
            self._loop = (threading.get_ident(), anyio.lowlevel.current_token(), local)
        if self._token.is_set():
            local.set()
        try:
            return await fn(local)
        finally:
            with anyio.CancelScope(shield=True):
                if not self._lock.acquire(blocking=False):  # a hand-over is under way
                    await anyio.to_thread.run_sync(self._lock.acquire)
            self._loop = None
            self._lock.release()


async def run_bridged(
    bridge: LoopBridge | None, fn: Callable[[InterruptToken | None], Awaitable[T]]
) -> T:
    """``fn(interrupt)`` on a private loop: through `bridge`, or with no token."""
    if bridge is None:
        return await fn(None)
    return await bridge.within(fn)


def bridge_of(token: InterruptToken | None) -> LoopBridge | None:
    """A `LoopBridge` for the run's token; None without one."""
    return None if token is None else LoopBridge(token)


def run_seated_sync(
    seat: Seat | None,
    token: InterruptToken | None,
    fn: Callable[[InterruptToken | None], Awaitable[T]],
) -> T:
    """The sync path's one way to run: wait for `seat`, then ``fn`` on a private loop.

    `seat` is the call's place in its message's batch under a ``Send`` fan-out
    (None: the whole batch came at once); interrupted while it waits, ``fn``
    answers its calls "not run". ``fn`` gets the run's `token` through a
    `LoopBridge`. The seat is left and the bridge closed whatever happens.
    """
    bridge = bridge_of(token)
    try:
        if seat is not None:
            seat.wait_sync(token)
        return run_blocking(partial(run_bridged, bridge, fn))
    finally:
        if seat is not None:
            seat.leave()
        if bridge is not None:
            bridge.close()


def _messages_of(state: Any) -> Sequence[Any]:
    if isinstance(state, dict):
        messages = state.get("messages")
    elif isinstance(state, list):
        messages = state
    else:
        messages = getattr(state, "messages", None)
    return messages if isinstance(messages, list) else []


def _step_of(info: ExecutionInfo | None) -> tuple[str | None, str, str] | None:
    """The graph step a task runs in: its thread, checkpoint and parent namespace."""
    if info is None:
        return None
    parent = info.checkpoint_ns.rpartition("|")[0]
    return (info.thread_id, info.checkpoint_id, parent)


class FanOut:
    """The `SendBatch` of each AI message whose calls LangGraph sends one by one."""

    def __init__(self, scheduler: ForeignScheduler) -> None:
        self._scheduler = scheduler
        self._batches = SendBatches()

    def seat(
        self,
        call: ToolCall,
        state: Any,
        config: RunnableConfig,
        info: ExecutionInfo | None,
    ) -> Seat | None:
        """The seat of `call` in its message's batch; None if no message in `state` has it."""
        messages = _messages_of(state)
        at = next(
            (
                i
                for i in range(len(messages) - 1, -1, -1)
                if isinstance(messages[i], AIMessage)
            ),
            None,
        )
        if at is None:
            return None
        ai: AIMessage = messages[at]
        calls = ai.tool_calls
        places = [i for i, c in enumerate(calls) if c["id"] == call["id"]]
        if not places:
            return None
        answered = {
            m.tool_call_id for m in messages[at + 1 :] if isinstance(m, ToolMessage)
        }
        resuming = bool((config.get("configurable") or {}).get(RESUMING_KEY))
        # Resumed, the calls that finished before the interrupt are not sent again:
        # wait only for those that come.
        expected = (
            []
            if resuming
            else [i for i, c in enumerate(calls) if c["id"] not in answered]
        )
        key = (_step_of(info), ai.id, tuple((c["id"], c["name"]) for c in calls))

        def make() -> SendBatch:
            accesses = [self._scheduler.access_of(c["name"], c["args"]) for c in calls]
            return SendBatch(accesses, expected, self._scheduler.batch_cap)

        return self._batches.get(key, make).seat(places)
