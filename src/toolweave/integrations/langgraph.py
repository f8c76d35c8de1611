"""toolweave's scheduling inside LangGraph: `ScheduledToolNode`, a drop-in for `ToolNode`.

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

One batch at a time: the node must be handed the whole AI message. With
`create_react_agent` pass ``version="v1"``; its default ``"v2"`` sends every
call to its own node instance (LangGraph's ``Send``), where each call is a
batch of one that toolweave cannot order against its siblings: the node warns
(`SplitBatchWarning`) the first time it is handed a lone call that way.

Requires ``toolweave[langgraph]``. Relies on `ToolNode`'s per-call methods of
the pinned langgraph-prebuilt release.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, cast

import anyio

from . import _needs_langgraph  # noqa: F401  first: a missing framework names its extra

# isort: split
from langchain_core.messages import AnyMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import get_config_list
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp, is_invalid_resume
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolRuntime, _handle_tool_error
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel

from ..scheduling import InterruptToken
from ..tools import run_in_worker_thread
from ._blocking import run_blocking
from ._declaration import Declaration, Declarations, checked_declarations
from ._foreign import ForeignScheduler, Outcome, Raised

__all__ = ["INTERRUPT_KEY", "Declaration", "ScheduledToolNode", "SplitBatchWarning"]

INTERRUPT_KEY = "toolweave_interrupt"
"""Key in ``config["configurable"]`` for the run's `InterruptToken`."""


class SplitBatchWarning(UserWarning):
    """The node was handed one call of a larger batch: it cannot order it against the rest."""


_Output = ToolMessage | Command[Any] | list[ToolMessage | Command[Any]]
_InputType = Literal["list", "dict", "tool_calls"]


def _describe(value: _Output) -> str | Raised:
    """Text of a node output for toolweave's result; an error ToolMessage is Raised."""
    if isinstance(value, ToolMessage):
        content = value.content
        text = content if isinstance(content, str) else str(content)
        return Raised(text) if value.status == "error" else text
    if isinstance(value, list):
        parts = [_describe(v) for v in value]
        return "\n".join(p.text if isinstance(p, Raised) else p for p in parts)
    return repr(value)


class _Unanswerable(Exception):
    """Carries past the scheduler an error no setting answers (an invalid resume)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def _error_message(call: ToolCall, exc: Exception) -> ToolMessage:
    return ToolMessage(
        content=_handle_tool_error(exc, flag=True),
        name=call["name"],
        tool_call_id=call["id"],
        status="error",
    )


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
            else (GraphBubbleUp, _Unanswerable)
        )
        self._warned = False
        self._scheduler = ForeignScheduler(
            checked_declarations(declarations), **(scheduler_options or {})
        )

    def _parse_input(
        self, input: list[AnyMessage] | dict[str, Any] | BaseModel
    ) -> tuple[list[ToolCall], _InputType]:
        tool_calls, input_type = super()._parse_input(input)
        if (
            not self._warned
            and isinstance(input, dict)
            and input.get("__type") == "tool_call_with_context"
        ):
            self._warned = True
            warnings.warn(
                "ScheduledToolNode was handed one tool call of a batch (LangGraph Send,"
                " e.g. create_react_agent(version='v2')); calls sent apart cannot be"
                " ordered against each other. Use create_react_agent(version='v1').",
                SplitBatchWarning,
                stacklevel=2,
            )
        return tool_calls, input_type

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
                raise _Unanswerable(exc) from exc
            return _error_message(tool_calls[index], exc)

        try:
            outcomes = await self._scheduler.run(
                [(c["id"] or "", c["name"], c["args"]) for c in tool_calls],
                invoke,
                _describe,
                passthrough=self._passthrough,
                interrupt=_interrupt_of(config),
                recover=recover,
            )
        except _Unanswerable as wrapped:
            raise wrapped.error from None
        # The node's value where it ran (even None, from a wrapper that returned
        # nothing: `ToolNode` passes it on too), else why not.
        return [
            cast("_Output", o.value) if o.ran else _no_value(c, o)
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
        outputs = await self._schedule(
            tool_calls, config, input_type, runtimes, sync=False
        )
        return self._combine_tool_outputs(outputs, input_type)

    def _func(
        self,
        input: list[AnyMessage] | dict[str, Any] | BaseModel,
        config: RunnableConfig,
        runtime: Runtime[Any],
    ) -> Any:
        tool_calls, input_type = self._parse_input(input)
        runtimes = self._runtimes(input, config, runtime, tool_calls)

        async def batch() -> list[_Output]:
            return await self._schedule(
                tool_calls, config, input_type, runtimes, sync=True
            )

        outputs = run_blocking(batch)
        return self._combine_tool_outputs(outputs, input_type)


def _interrupt_of(config: RunnableConfig) -> InterruptToken | None:
    token = (config.get("configurable") or {}).get(INTERRUPT_KEY)
    if token is None or isinstance(token, InterruptToken):
        return token
    raise TypeError(
        f"config['configurable'][{INTERRUPT_KEY!r}] must be a toolweave"
        f" InterruptToken, not {type(token).__name__}"
    )


def _no_value(call: ToolCall, outcome: Outcome[_Output]) -> ToolMessage:
    """The error ToolMessage answering a call the node gave no value for: why."""
    return ToolMessage(
        content=outcome.result.text,
        name=call["name"],
        tool_call_id=call["id"],
        status="error",
    )
