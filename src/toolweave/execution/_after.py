"""After the tool ran: its result, a stop it asked for, PostToolUse / PostToolUseFailure.

`settle` is the one way a call that ran becomes its result, on both paths.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from ..messages import ToolCall, ToolResult
from ._answers import post_hooks_cut
from ._execute import Executed
from ._hook_stage import run_failure_hooks, run_post_hooks
from ._hooks import PostToolUseFailureInput, PostToolUseInput
from ._lifecycle import Lifecycle
from ._plan import ToolPlan
from ._signals import CallFailed

__all__ = ["settle"]


async def settle(
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    executed: Executed,
) -> ToolResult:
    """The result of a call that ran: its failure, or its output (then its hooks).

    Raises `CallFailed` when a hook fails the call (its context change kept).
    """
    if executed.error is not None:
        return await _failed(lc, plan, call, args, executed)
    tool = plan.tool
    result = await lc.to_result(tool, call, executed.output, executed.modifier)
    if executed.stop is not None:
        lc.signals.add_stop(call.ref, executed.stop)
    if result.is_error:  # the tool's own error result (a ToolOutput saying so)
        if not plan.failure:
            return result
        return await _failure_hooks(lc, plan, call, args, result, result.text)
    if not plan.post:
        return result
    return await _post_hooks(lc, plan, call, args, executed, result)


async def _post_hooks(
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    executed: Executed,
    result: ToolResult,
) -> ToolResult:
    tool = plan.tool
    data = PostToolUseInput(
        call=call,
        tool_name=tool.name,
        input=args,
        output=executed.output,
        result=result,
    )
    replace = _replacer(lc, plan, call, executed) if tool.replaceable_output else None
    try:
        return await run_post_hooks(
            plan.post, data, signals=lc.signals, replace=replace, warn=lc.warn
        )
    except CallFailed as failed:
        # The tool ran: its context change happened whatever the hook did.
        failed.modifier = executed.modifier
        raise
    except anyio.get_cancelled_exc_class():
        # Interrupted while its PostToolUse hooks ran: the tool *finished*, so
        # "stopped before it finished" would be untrue and its context change
        # would be lost. Cancellation is level-triggered: an outer cancel fires
        # again at the caller's next checkpoint, so nothing is swallowed for good.
        return post_hooks_cut(tool, call, executed.modifier)


def _replacer(
    lc: Lifecycle, plan: ToolPlan, call: ToolCall, executed: Executed
) -> Callable[[object], Awaitable[ToolResult]]:
    async def replace(output: object) -> ToolResult:
        lc.ledger.discard(call.ref)
        return await lc.to_result(plan.tool, call, output, executed.modifier)

    return replace


async def _failed(
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    executed: Executed,
) -> ToolResult:
    error = executed.error or "failed"
    if executed.timed_out:
        lc.timeouts += 1
    if executed.thread_left:
        lc.threads_left += 1
        lc.warn(f"call {call.id} ({plan.tool.name}): {error}")
    result = ToolResult(
        call.id, error, is_error=True, context_modifier=executed.modifier
    )
    if not plan.failure:
        return result
    return await _failure_hooks(lc, plan, call, args, result, error)


async def _failure_hooks(
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    result: ToolResult,
    error: str,
) -> ToolResult:
    data = PostToolUseFailureInput(
        call=call, tool_name=plan.tool.name, input=args, error=error, result=result
    )
    try:
        await run_failure_hooks(plan.failure, data, signals=lc.signals)
    except CallFailed as failed:
        failed.modifier = result.context_modifier
        raise
    except anyio.get_cancelled_exc_class():
        # The tool ran and failed; only its hooks were cut: its own error
        # result is the truth (level-triggered: an outer cancel fires again
        # at the caller's next checkpoint).
        return result
    return result
