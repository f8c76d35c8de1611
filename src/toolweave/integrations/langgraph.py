"""toolweave's scheduling inside LangGraph: `ScheduledToolNode`, `ScheduledToolMiddleware`.

`ToolNode` runs every tool call of an AI message at once (``asyncio.gather``,
or a thread pool on the sync path), whatever the tools do, and by default a
tool that raises aborts the graph. `ScheduledToolNode` keeps `ToolNode`'s
input, output, state injection, `Command` handling and wrappers, and changes
only *when* each call runs: toolweave's Dispatcher schedules the calls by
their declarations (`declarations`: tool name → `Declaration`; undeclared
tools are SEQUENTIAL barriers), under the caps of its `ConcurrencyConfig`,
through the `ToolRunner` lifecycle (hooks, permissions, timeouts, audit).
Results are one `ToolMessage` per call in call order; a tool that raises gives
a ``status="error"`` `ToolMessage` while its siblings finish.

Interrupts: set the `InterruptToken` passed as
``config["configurable"][INTERRUPT_KEY]`` and the running batch stops as
toolweave's do (CANCEL tools now, BLOCK tools run to the end, calls not started
are answered "not run"); every call still gets a `ToolMessage`. LangGraph's
own `interrupt()` raised inside a tool is re-raised once every sibling has
finished (LangGraph re-runs the node on resume, as it does for `ToolNode`).

Send fan-out: langchain's ``create_agent`` and ``create_react_agent(version="v2")``
send each call of an AI message to the tools node as a task of its own. For
``create_agent`` use `ScheduledToolMiddleware` (its ``middleware=``; a
`ScheduledToolNode` passed as its ``tools`` is refused with a TypeError naming
it); under v2 the node itself takes each lone call's turn in its message's
batch. Either way each call waits for the earlier calls of its message it
conflicts with (the message's ``tool_calls`` are the batch, a call's place in
them its key), so the schedule and the results are as for the whole message.
A lone call whose AI message is not in the state runs unordered, with a
`SplitBatchWarning`.

Requires ``toolweave[langgraph]``. Relies on `ToolNode`'s per-call methods of
the pinned langgraph-prebuilt release.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, NoReturn, cast

import anyio

from . import _needs_langgraph  # noqa: F401  first: a missing framework names its extra

# isort: split
from langchain_core.messages import AnyMessage, ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_config_list
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp, is_invalid_resume
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolRuntime
from langgraph.runtime import Runtime
from pydantic import BaseModel

from ..scheduling import InterruptToken
from ..tools import run_in_worker_thread
from ._declaration import Declaration, Declarations, checked_declarations
from ._foreign import ForeignScheduler
from ._lg_common import (
    INTERRUPT_KEY,
    FanOut,
    SplitBatchWarning,
    Unanswerable,
    describe,
    error_message,
    interrupt_of,
    no_value,
    run_seated_sync,
)
from ._lg_common import Output as _Output
from ._send_batch import Seat

if TYPE_CHECKING:
    from ._lg_middleware import ScheduledToolMiddleware

__all__ = [
    "INTERRUPT_KEY",
    "Declaration",
    "ScheduledToolMiddleware",
    "ScheduledToolNode",
    "SplitBatchWarning",
]

_InputType = Literal["list", "dict", "tool_calls"]


def __getattr__(name: str) -> Any:
    """`ScheduledToolMiddleware` is imported on first use: it needs ``langchain``."""
    if name == "ScheduledToolMiddleware":
        from ._lg_middleware import ScheduledToolMiddleware

        return ScheduledToolMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ScheduledToolNode(ToolNode):
    """`ToolNode` whose calls run on toolweave's schedule. Same input and output.

    Args:
        tools: As for `ToolNode`.
        declarations: Tool name → `Declaration` (concurrency, access, interrupt,
            timeout). An undeclared tool is SEQUENTIAL with undeclared access.
        scheduler_options: Passed to the scheduler: ``config``
            (`ConcurrencyConfig`: policy, caps), ``dispatcher`` (share one
            host cap between nodes; it must belong to the graph's event loop),
            ``hooks``, ``permissions``, ``mode``, ``on_event``, ``audit``.
        on_error: What a tool error the node's ``handle_tool_errors`` does not
            handle becomes. ``"answer"`` (default, toolweave's isolation): an
            error `ToolMessage` in ``handle_tool_errors=True``'s words, and the
            graph goes on. ``"raise"`` (`ToolNode`'s behaviour): it propagates
            and aborts the graph, once every sibling has finished (the first in
            call order).
        **node_options: `ToolNode`'s own options (``name``, ``messages_key``,
            ``handle_tool_errors``, ``wrap_tool_call`` …).

    Loop and thread affinity: the async path runs on the graph's event loop; the
    sync path runs a private event loop per batch, and each sync tool on a
    worker thread (a thread cannot be stopped, so CANCEL interrupts wait for it).
    """

    def __init__(
        self,
        tools: Sequence[BaseTool | Callable[..., Any]],
        *,
        declarations: Declarations | None = None,
        scheduler_options: Mapping[str, Any] | None = None,
        on_error: Literal["answer", "raise"] = "answer",
        **node_options: Any,
    ) -> None:
        if on_error not in ("answer", "raise"):
            raise ValueError(f"on_error must be answer or raise, not {on_error!r}")
        super().__init__(tools, **node_options)
        self._passthrough: tuple[type[BaseException], ...] = (
            (GraphBubbleUp, Exception)
            if on_error == "raise"
            else (GraphBubbleUp, Unanswerable)
        )
        self._warned = False
        self._scheduler = ForeignScheduler(
            checked_declarations(declarations), **(scheduler_options or {})
        )
        self._fanout = FanOut(self._scheduler)

    def __iter__(self) -> NoReturn:
        """Refused: ``create_agent`` takes a list of tools, not a node."""
        raise TypeError(
            "a ScheduledToolNode is a graph node, not a list of tools: for"
            " langchain's create_agent pass the tools and"
            " middleware=[ScheduledToolMiddleware(declarations)]"
            " (from toolweave.integrations.langgraph)"
        )

    def _seat_of(
        self,
        input_type: _InputType,
        tool_calls: list[ToolCall],
        runtimes: list[ToolRuntime[Any, Any]],
        runtime: Runtime[Any],
    ) -> Seat | None:
        """The seat of a lone call LangGraph sent on its own, in its AI message's batch.

        None for a whole message (the node schedules it itself) or a lone call
        no AI message in the state holds (it runs unordered: warned once).
        """
        if input_type != "tool_calls" or len(tool_calls) != 1:
            return None
        call, tool_runtime = tool_calls[0], runtimes[0]
        seat = self._fanout.seat(
            call, tool_runtime.state, tool_runtime.config, runtime.execution_info
        )
        if seat is None and not self._warned:
            self._warned = True
            warnings.warn(
                "ScheduledToolNode was handed one tool call (LangGraph Send) whose AI"
                " message is not in the state: it cannot be ordered against the"
                " message's other calls.",
                SplitBatchWarning,
                stacklevel=3,
            )
        return seat

    def _runtimes(
        self,
        input: list[AnyMessage] | dict[str, Any] | BaseModel,
        config: RunnableConfig,
        runtime: Runtime[Any],
        tool_calls: list[ToolCall],
    ) -> list[ToolRuntime[Any, Any]]:
        """One ToolRuntime per call, built as `ToolNode` builds them."""
        tools = list(self.tools_by_name.values())
        runtimes: list[ToolRuntime[Any, Any]] = []
        for call, cfg in zip(
            tool_calls, get_config_list(config, len(tool_calls)), strict=True
        ):
            runtimes.append(
                ToolRuntime(
                    state=self._extract_state(input, cfg),
                    tool_call_id=call["id"],
                    config=cfg,
                    context=runtime.context,
                    store=runtime.store,
                    stream_writer=runtime.stream_writer,
                    tools=tools,
                    execution_info=runtime.execution_info,
                    server_info=runtime.server_info,
                )
            )
        return runtimes

    async def _schedule(
        self,
        tool_calls: list[ToolCall],
        config: RunnableConfig,
        input_type: _InputType,
        runtimes: list[ToolRuntime[Any, Any]],
        *,
        sync: bool,
        interrupt: InterruptToken | None,
    ) -> list[_Output]:
        """Run the calls on toolweave's schedule: `ToolNode`'s own per-call method each.

        `sync`: the node's sync path (`_run_one` on a worker thread), else
        `_arun_one` on this loop.
        """
        # The run's own cap (RunnableConfig max_concurrency, which ToolNode's sync
        # path obeys): at most that many of the batch's calls run at once.
        limit = config.get("max_concurrency")
        cap = None if limit is None else anyio.CapacityLimiter(limit)
        direct = cap is None and not sync

        def start(index: int, call: ToolCall) -> Awaitable[_Output]:
            # The node's own execution of one call (a plain function: no extra frame).
            if sync:
                return run_in_worker_thread(
                    partial(self._run_one, call, input_type, runtimes[index])
                )
            return self._arun_one(call, input_type, runtimes[index])

        async def capped(index: int, call: ToolCall) -> _Output:
            assert cap is not None
            async with cap:
                return await start(index, call)

        def invoke(index: int, args: Mapping[str, Any]) -> Awaitable[_Output]:
            # The node's awaitable itself (no coroutine of ours around it):
            # the scheduler answers what it raises with `recover`.
            call = tool_calls[index]
            if args != call["args"]:  # a PreToolUse hook rewrote it
                call = {**call, "args": dict(args)}
            if direct:  # start's async case, without the call
                return self._arun_one(call, input_type, runtimes[index])
            return start(index, call) if cap is None else capped(index, call)

        def recover(index: int, exc: Exception) -> _Output:
            # isolation: never abort the graph
            if is_invalid_resume(exc):  # as ToolNode: the interrupt is asked again
                raise Unanswerable(exc) from exc
            return error_message(tool_calls[index], exc)

        try:
            outcomes = await self._scheduler.run(
                [(c["id"] or "", c["name"], c["args"]) for c in tool_calls],
                invoke,
                describe,
                passthrough=self._passthrough,
                interrupt=interrupt,
                recover=recover,
            )
        except Unanswerable as wrapped:
            raise wrapped.error from None
        # The node's value where it ran (even None, from a wrapper that returned
        # nothing: `ToolNode` passes it on too), else why not.
        return [
            cast("_Output", o.value) if o.ran else no_value(c, o)
            for c, o in zip(tool_calls, outcomes, strict=True)
        ]

    async def _afunc(
        self,
        input: list[AnyMessage] | dict[str, Any] | BaseModel,
        config: RunnableConfig,
        runtime: Runtime[Any],
    ) -> Any:
        tool_calls, input_type = self._parse_input(input)
        runtimes = self._runtimes(input, config, runtime, tool_calls)
        interrupt = interrupt_of(config)
        seat = self._seat_of(input_type, tool_calls, runtimes, runtime)
        try:
            if seat is not None:  # interrupted while waiting: answered "not run"
                await seat.wait(interrupt)
            outputs = await self._schedule(
                tool_calls,
                config,
                input_type,
                runtimes,
                sync=False,
                interrupt=interrupt,
            )
        finally:
            if seat is not None:
                seat.leave()
        return self._combine_tool_outputs(outputs, input_type)

    def _func(
        self,
        input: list[AnyMessage] | dict[str, Any] | BaseModel,
        config: RunnableConfig,
        runtime: Runtime[Any],
    ) -> Any:
        tool_calls, input_type = self._parse_input(input)
        runtimes = self._runtimes(input, config, runtime, tool_calls)
        seat = self._seat_of(input_type, tool_calls, runtimes, runtime)

        def batch(interrupt: InterruptToken | None) -> Awaitable[list[_Output]]:
            return self._schedule(
                tool_calls, config, input_type, runtimes, sync=True, interrupt=interrupt
            )

        outputs = run_seated_sync(seat, interrupt_of(config), batch)
        return self._combine_tool_outputs(outputs, input_type)
