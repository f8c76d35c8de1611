"""ScheduledToolMiddleware: toolweave's schedule for LangChain's ``create_agent``.

``create_agent`` (langchain 1.x) builds its own `ToolNode` and sends each tool
call of the model's message to it as a task of its own (LangGraph ``Send``);
a middleware's ``wrap_tool_call`` / ``awrap_tool_call`` runs around each. This
middleware admits each call through the batch of its AI message (`FanOut`:
the message's ``tool_calls`` are the batch, a call's place in them its key),
so conflicting calls never overlap and run in call order, the others overlap,
and then runs the call through toolweave's `ToolRunner` lifecycle (hooks,
permissions, timeouts, audit, interrupts), its work being the rest of the
chain (``handler``: later middleware, then `ToolNode`'s execution).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Literal

from . import _needs_langgraph  # noqa: F401  first: a missing framework names its extra

# isort: split
from .._extras import missing_extra

try:
    from langchain.agents.middleware import AgentMiddleware
except ImportError as exc:  # langgraph without langchain: an older install of the extra
    raise missing_extra(
        exc,
        extra="langgraph",
        needs="ScheduledToolMiddleware needs langchain 1.x (create_agent)",
    ) from exc

# isort: split
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphBubbleUp, is_invalid_resume
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..scheduling import InterruptToken
from ..tools import run_in_worker_thread
from ._declaration import Declarations, checked_declarations
from ._foreign import ForeignScheduler
from ._lg_common import (
    FanOut,
    Output,
    Unanswerable,
    describe,
    error_message,
    interrupt_of,
    no_value,
    run_seated_sync,
)

__all__ = ["ScheduledToolMiddleware"]

_Handler = Callable[[ToolCallRequest], ToolMessage | Command[Any]]
_AsyncHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]


class ScheduledToolMiddleware(AgentMiddleware):
    """Runs ``create_agent``'s tool calls on toolweave's schedule.

    ``create_agent(model, tools, middleware=[ScheduledToolMiddleware(declarations)])``.
    Put it **first** in ``middleware``: it must see every call of a message
    (a middleware outside it that answers a call without calling on would
    leave the later calls that conflict with it waiting), and a retrying
    middleware inside it retries within the call's turn.

    Args:
        declarations: Tool name → `Declaration` (concurrency, access, interrupt,
            timeout). An undeclared tool is SEQUENTIAL with undeclared access:
            a barrier.
        scheduler_options: As for `ScheduledToolNode`: ``config``
            (`ConcurrencyConfig`: policy, caps; ``max_concurrency`` /
            ``per_batch_max`` cap one message's calls), ``dispatcher``,
            ``hooks``, ``permissions``, ``mode``, ``on_event``, ``audit``.
        on_error: What an exception the chain raises becomes: ``"answer"``
            (default) an error `ToolMessage` in ``handle_tool_errors=True``'s
            words; ``"raise"`` it propagates, as without the middleware.

    The order holds among the calls of one AI message. Loop and thread
    affinity: ``awrap_tool_call`` runs on the graph's loop (asyncio: LangGraph's
    own); ``wrap_tool_call`` on LangGraph's worker thread for the call, where
    the call runs on a private loop and the chain on a worker thread.
    """

    def __init__(
        self,
        declarations: Declarations | None = None,
        *,
        scheduler_options: Mapping[str, Any] | None = None,
        on_error: Literal["answer", "raise"] = "answer",
    ) -> None:
        if on_error not in ("answer", "raise"):
            raise ValueError(f"on_error must be answer or raise, not {on_error!r}")
        super().__init__()
        self.tools = []
        self._passthrough: tuple[type[BaseException], ...] = (
            (GraphBubbleUp, Exception)
            if on_error == "raise"
            else (GraphBubbleUp, Unanswerable)
        )
        self._scheduler = ForeignScheduler(
            checked_declarations(declarations), **(scheduler_options or {})
        )
        self._fanout = FanOut(self._scheduler)

    def _seat(self, request: ToolCallRequest) -> Any:
        runtime = request.runtime
        return self._fanout.seat(
            request.tool_call, request.state, runtime.config, runtime.execution_info
        )

    async def _run(
        self,
        request: ToolCallRequest,
        start: Callable[[ToolCallRequest], Awaitable[Output]],
        interrupt: InterruptToken | None,
    ) -> Output:
        """The call through the lifecycle; its work is `start(request)`."""
        call = request.tool_call

        def invoke(index: int, args: Mapping[str, Any]) -> Awaitable[Output]:
            del index
            if args == call["args"]:
                return start(request)
            return start(request.override(tool_call={**call, "args": dict(args)}))

        def recover(index: int, exc: Exception) -> Output:
            del index
            if is_invalid_resume(exc):
                raise Unanswerable(exc) from exc
            return error_message(call, exc)

        try:
            outcomes = await self._scheduler.run(
                [(call["id"] or "", call["name"], call["args"])],
                invoke,
                describe,
                passthrough=self._passthrough,
                interrupt=interrupt,
                recover=recover,
            )
        except Unanswerable as wrapped:
            raise wrapped.error from None
        outcome = outcomes[0]
        return outcome.value if outcome.ran else no_value(call, outcome)  # type: ignore[return-value]

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: _Handler
    ) -> ToolMessage | Command[Any]:
        """Wait for the call's turn in its message, then run it (sync path)."""
        seat = self._seat(request)
        token = interrupt_of(request.runtime.config)

        def start(req: ToolCallRequest) -> Awaitable[Output]:
            return run_in_worker_thread(partial(handler, req))

        def run(interrupt: InterruptToken | None) -> Awaitable[Output]:
            return self._run(request, start, interrupt)

        return run_seated_sync(seat, token, run)  # type: ignore[return-value]

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: _AsyncHandler
    ) -> ToolMessage | Command[Any]:
        """Wait for the call's turn in its message, then run it (async path)."""
        seat = self._seat(request)
        interrupt = interrupt_of(request.runtime.config)
        try:
            if seat is not None:  # interrupted while waiting: answered "not run"
                await seat.wait(interrupt)
            value = await self._run(request, handler, interrupt)
        finally:
            if seat is not None:
                seat.leave()
        return value  # type: ignore[return-value]
