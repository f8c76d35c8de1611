"""toolweave's scheduling inside the OpenAI Agents SDK: `scheduled_tools`.

The SDK's runner starts one task per function-tool call of a model response, all
at once (``RunConfig.tool_execution.max_function_tool_concurrency`` caps them,
nothing orders them), and a task reaches the tool's ``on_invoke_tool`` after the
call's approval, input guardrails and ``on_tool_start`` hooks. The SDK offers no
extension point that sees the batch before its calls start, and none that says
when a call will never reach its tool (refused by a guardrail, waiting for
approval). So `scheduled_tools` wraps each `FunctionTool`'s ``on_invoke_tool``
and schedules calls *as they arrive*: toolweave's ``conflict`` policy over
arrival order (each call waits for every earlier-arrived call it conflicts with;
undeclared tools are barriers), a `max_concurrency` cap, and toolweave's
`ToolRunner` lifecycle per call (hooks, permissions, timeouts, audit).

Arrival order is call order when nothing before the tool body suspends for
longer for one call than another (the SDK creates the tasks in call order and
asyncio runs them first-in first-out); an asynchronous approval, guardrail or
hook that takes longer for an earlier call lets a later one arrive first. Then a
conflicting pair still never overlaps, but runs in arrival order. Results
reach the model in call order (the SDK records them by position).

A `@function_tool` keeps the SDK's own invoker (argument preparation for
approval policies, failure handling, ``__wrapped__``); only the function it
runs is scheduled. Hosted and other non-function tools pass through untouched
(those the SDK runs locally, like a local `ShellTool`, with an
`UnscheduledToolWarning`: they run beside the function tools unscheduled).

A tool's SDK timeout (``timeout_seconds``) counts from the start of its body,
not its wait for a turn (`_BodyTimeout`), except a ``raise_exception`` one.

Errors: by default a tool's exception is handled by the SDK as it would be
(its ``failure_error_function``, an error text for the model by default; with
none, the run fails). ``on_error="answer"`` answers with an error text only what
the SDK would raise. A call toolweave refuses (permission denied, timeout,
interrupted) is answered with an error text. Requires ``toolweave[openai-agents]``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import warnings
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, final

import anyio

from . import _needs_openai_agents  # noqa: F401  first: a missing framework names its extra

# isort: split
from agents import (
    ApplyPatchTool,
    ComputerTool,
    CustomTool,
    FunctionTool,
    LocalShellTool,
    ShellTool,
    Tool,
)
from agents.exceptions import ToolTimeoutError
from agents.tool import (
    _DEFAULT_FAILURE_HANDLED_ATTR,
    _FUNCTION_TOOL_WRAPPED_CALLABLE_MARKER,
    _SYNC_FUNCTION_TOOL_MARKER,
    _FailureHandlingFunctionToolInvoker,
    _get_function_tool_invoke_context,
    default_tool_timeout_error_message,
    resolve_function_tool_failure_error_function,
)
from agents.tool_context import ToolContext

from ..messages import ToolCall
from ..scheduling import InterruptToken, classify
from ..tools import Access
from ._agents_copies import (
    _UNSCHEDULED_MARKER,
    _scheduled_class,
    _Unscheduled,
    unscheduled,
)
from ._arrival import ArrivalGate
from ._declaration import Declaration, Declarations, checked_declarations
from ._foreign import ForeignCall, ForeignScheduler

__all__ = [
    "Declaration",
    "ErrorMode",
    "ToolScheduler",
    "UnscheduledToolWarning",
    "scheduled_tools",
    "unscheduled",
]

_PREPARE_MARKER = "__agents_prepare_arguments__"
"""Where a `@function_tool`'s implementation keeps its approval-time argument preparation."""

ErrorMode = Literal["raise", "answer"]
"""A tool's exception: left to the SDK (``raise``), or answered as error text."""


def _describe(value: object) -> str:
    return value if isinstance(value, str) else repr(value)


def _args(input_json: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(input_json) if input_json.strip() else {}
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


@final
class ToolScheduler:
    """The shared state of one set of scheduled tools: gate, cap, lifecycle.

    Loop affinity: the event loop of the runs that use the tools (asyncio).
    """

    def __init__(
        self,
        declarations: Declarations | None = None,
        *,
        on_error: ErrorMode = "raise",
        max_concurrency: int | None = None,
        interrupt: InterruptToken | None = None,
        scheduler_options: Mapping[str, Any] | None = None,
    ) -> None:
        if on_error not in ("raise", "answer"):
            raise ValueError(f"on_error must be raise or answer, not {on_error!r}")
        self.on_error = on_error
        self.interrupt = interrupt
        """Set it to stop: calls not started are answered "not run: interrupted"."""
        self._scheduler = ForeignScheduler(
            checked_declarations(declarations), **(scheduler_options or {})
        )
        self._gate = ArrivalGate()
        self._limit = max_concurrency
        self._limiter: anyio.CapacityLimiter | None = None

    def wrap(self, tool: FunctionTool) -> FunctionTool:
        """A copy of `tool` whose calls go through this scheduler.

        A `@function_tool` keeps the SDK's own invoker (its argument preparation for
        approval policies, ``__wrapped__``, failure handling): only the function it
        runs is scheduled, so everything the SDK does around it stays as it was. A
        `FunctionTool` built by hand has its ``on_invoke_tool`` wrapped, with the
        context object the SDK would have passed it.
        """
        tool = unscheduled(tool)  # a scheduled copy is scheduled anew, not twice
        unscheduled_as = _Unscheduled(tool.on_invoke_tool, tool.timeout_seconds)
        scheduled = copy.copy(tool)
        scheduled.__class__ = _scheduled_class(type(tool))
        timer = _BodyTimeout.of(tool)
        if timer is not None:
            scheduled.timeout_seconds = None  # counted from the body's start instead
        invoker = scheduled.on_invoke_tool
        if isinstance(invoker, _FailureHandlingFunctionToolInvoker):
            scheduled.on_invoke_tool = self._wrap_invoker(
                scheduled, invoker, timer, unscheduled_as
            )
            return scheduled

        async def on_invoke_tool(ctx: ToolContext[Any], input_json: str) -> Any:
            given = _get_function_tool_invoke_context(tool, ctx)
            return await self._call(tool, invoker, ctx, given, input_json, timer)

        setattr(on_invoke_tool, _UNSCHEDULED_MARKER, unscheduled_as)
        scheduled.on_invoke_tool = on_invoke_tool
        return scheduled

    def _wrap_invoker(
        self,
        tool: FunctionTool,
        invoker: _FailureHandlingFunctionToolInvoker,
        timer: _BodyTimeout | None,
        unscheduled_as: _Unscheduled,
    ) -> _FailureHandlingFunctionToolInvoker:
        inner = invoker._invoke_tool_impl

        async def impl(ctx: ToolContext[Any], input_json: str) -> Any:
            return await self._call(tool, inner, ctx, ctx, input_json, timer)

        # on the implementation: the SDK rebinds the invoker of every copy it makes
        setattr(impl, _UNSCHEDULED_MARKER, unscheduled_as)
        for marker in (_PREPARE_MARKER, _FUNCTION_TOOL_WRAPPED_CALLABLE_MARKER):
            if hasattr(inner, marker):
                setattr(impl, marker, getattr(inner, marker))
        wrapped = _FailureHandlingFunctionToolInvoker(impl, invoker._on_handled_error)
        if getattr(invoker, _SYNC_FUNCTION_TOOL_MARKER, False):
            setattr(wrapped, _SYNC_FUNCTION_TOOL_MARKER, True)
        return wrapped.__agents_bind_function_tool__(tool)

    async def _call(
        self,
        tool: FunctionTool,
        inner: Any,
        ctx: ToolContext[Any],
        given: Any,
        input_json: str,
        timer: _BodyTimeout | None,
    ) -> Any:
        name = tool.name
        args = _args(input_json)
        if args is None:  # the SDK answers bad JSON; fail closed until it does
            access = Access.barrier()
        else:
            registry = self._scheduler.registry_for((name,))
            access = classify(ToolCall(ctx.tool_call_id, name, args), registry).access
        async with self._gate.hold(access):
            if self._limit is None:
                return await self._run(tool, inner, ctx, given, input_json, args, timer)
            if self._limiter is None:
                self._limiter = anyio.CapacityLimiter(self._limit)
            async with self._limiter:
                return await self._run(tool, inner, ctx, given, input_json, args, timer)

    async def _run(
        self,
        tool: FunctionTool,
        inner: Any,
        ctx: ToolContext[Any],
        given: Any,
        input_json: str,
        args: dict[str, Any] | None,
        timer: _BodyTimeout | None,
    ) -> Any:
        async def invoke(index: int, rewritten_args: Mapping[str, Any]) -> Any:
            del index
            if args is None or dict(rewritten_args) == args:
                body = inner(given, input_json)
            else:
                # A PreToolUse hook rewrote the input: arguments the SDK prepared
                # for an approval policy belong to the original input, not this one.
                ctx._function_tool_arguments = None
                body = inner(given, json.dumps(dict(rewritten_args)))
            return await (body if timer is None else timer.run(body, ctx))

        # The SDK answers a tool's exception itself (its failure_error_function)
        # unless the tool has none; "answer" answers only what the SDK would raise.
        sdk_answers = (
            resolve_function_tool_failure_error_function(tool, ctx) is not None
        )
        raises = self.on_error == "raise" or sdk_answers
        passthrough = (Exception,) if raises else ()
        call = ForeignCall(ctx.tool_call_id, tool.name, args or {})
        [outcome] = await self._scheduler.run(
            [call], invoke, _describe, passthrough=passthrough, interrupt=self.interrupt
        )
        if outcome.ran:
            return outcome.value
        return f"Error: {outcome.result.text}"


@dataclass(frozen=True, slots=True)
class _BodyTimeout:
    """A tool's SDK ``timeout_seconds``, counted from the start of its body.

    The SDK starts the clock when it invokes the tool, so the wait for the
    call's turn here (an earlier conflicting call, a `max_concurrency` slot)
    would count too, and a call could time out before its body ran. The
    scheduled copy has no SDK timeout; this applies the same one once the call
    has its turn, answered as the SDK answers it (``error_as_result``: its
    message or the tool's ``timeout_error_function``). A tool whose timeout
    raises (``raise_exception``) keeps the SDK's own: raised in the body, the
    failure handler around it would answer it instead of failing the run.
    """

    tool: FunctionTool
    seconds: float

    @classmethod
    def of(cls, tool: FunctionTool) -> _BodyTimeout | None:
        seconds = tool.timeout_seconds
        if seconds is None or tool.timeout_behavior != "error_as_result":
            return None
        return cls(tool, seconds)

    async def run(self, body: Awaitable[Any], ctx: ToolContext[Any]) -> Any:
        """`body` within the timeout; on expiry what the SDK's timeout returns."""
        task = asyncio.ensure_future(body)  # as the SDK does: the body's own task
        try:
            return await asyncio.wait_for(task, timeout=self.seconds)
        except TimeoutError:
            if task.done() and not task.cancelled():
                return task.result()  # finished at the deadline (or raises its error)
        tool = self.tool
        answer = tool.timeout_error_function
        if answer is None:
            # the SDK's own message: marked so the SDK skips the output schema
            setattr(ctx, _DEFAULT_FAILURE_HANDLED_ATTR, True)
            return default_tool_timeout_error_message(
                tool_name=tool.name, timeout_seconds=self.seconds
            )
        error = ToolTimeoutError(tool_name=tool.name, timeout_seconds=self.seconds)
        value = answer(ctx, error)
        return await value if inspect.isawaitable(value) else value


def scheduled_tools(
    tools: Sequence[Tool],
    declarations: Declarations | None = None,
    *,
    on_error: ErrorMode = "raise",
    max_concurrency: int | None = None,
    interrupt: InterruptToken | None = None,
    scheduler_options: Mapping[str, Any] | None = None,
) -> list[Tool]:
    """`tools` with every `FunctionTool` scheduled by toolweave; others unchanged.

    Args:
        tools: An agent's tools.
        declarations: Tool name → `Declaration`; undeclared = SEQUENTIAL barrier.
        on_error: ``"raise"`` leaves a tool's exception to the SDK; ``"answer"``
            answers with an error text what the SDK would raise (a tool with
            ``failure_error_function=None``).
        max_concurrency: At most this many of these tools' calls run at once.
        interrupt: When set, calls not started are answered "not run:
            interrupted", running CANCEL calls are stopped, BLOCK calls finish.
            One token per run: build the tools per run.
        scheduler_options: ``hooks``, ``permissions``, ``mode``, ``on_event``,
            ``audit`` for the `ToolRunner`.
    """
    scheduler = ToolScheduler(
        declarations,
        on_error=on_error,
        max_concurrency=max_concurrency,
        interrupt=interrupt,
        scheduler_options=scheduler_options,
    )
    local = [t.name for t in tools if _runs_locally(t)]
    if local:
        warnings.warn(
            f"scheduled_tools does not schedule {', '.join(local)}: the SDK runs"
            " these tools itself, beside the function tools of the same response."
            " Wrap such an action in a declared @function_tool to order it.",
            UnscheduledToolWarning,
            stacklevel=2,
        )
    return [scheduler.wrap(t) if isinstance(t, FunctionTool) else t for t in tools]


class UnscheduledToolWarning(UserWarning):
    """A tool the SDK executes locally was passed through unscheduled."""


def _runs_locally(tool: Tool) -> bool:
    """True for the non-function tools the SDK executes on this machine."""
    if isinstance(tool, ShellTool):
        # normalized by the SDK: a local environment is the one with an executor
        return tool.environment is None or tool.environment["type"] == "local"
    return isinstance(tool, LocalShellTool | ComputerTool | ApplyPatchTool | CustomTool)
