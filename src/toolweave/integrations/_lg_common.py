"""What `ScheduledToolNode` and `ScheduledToolMiddleware` share: values, errors, fan-out.

LangGraph's ``Send`` fan-out (``create_agent``, ``create_react_agent(version="v2")``)
runs each tool call of an AI message as a task of its own. `FanOut` finds the
`SendBatch` of the message a lone call belongs to, from the state the task is
given: the last AI message's ``tool_calls`` are the batch, a call's place in
them its key, and the calls no `ToolMessage` after that message answers yet
are the ones LangGraph sends.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from . import _needs_langgraph  # noqa: F401  first: a missing framework names its extra

# isort: split
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt.tool_node import _handle_tool_error
from langgraph.runtime import ExecutionInfo
from langgraph.types import Command

from ..scheduling import InterruptToken
from ._foreign import ForeignScheduler, Outcome, Raised
from ._send_batch import Seat, SendBatch, SendBatches

__all__ = [
    "INTERRUPT_KEY",
    "RESUMING_KEY",
    "FanOut",
    "Output",
    "SplitBatchWarning",
    "Unanswerable",
    "describe",
    "error_message",
    "interrupt_of",
    "loop_local",
    "no_value",
]

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


@contextmanager
def loop_local(token: InterruptToken | None) -> Iterator[InterruptToken | None]:
    """A token for one private event loop, set whenever `token` is, from any thread.

    Enter it on a thread with no event loop (the sync path), before the loop
    starts. An `InterruptToken` has one home loop; the sync path runs a private
    loop per batch (per call, under fan-out, each on its own thread), so the
    run's token is never given to them: each gets its own, which the run's sets
    (from whichever thread sets it) and which hands the work to its own loop.
    """
    if token is None:
        yield None
        return
    local = InterruptToken()
    unsubscribe = token.subscribe(local.set)
    try:
        yield local
    finally:
        unsubscribe()


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
