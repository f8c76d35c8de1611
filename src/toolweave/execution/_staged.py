"""The staged chain: a call of a tool some lifecycle stage can act on.

In order: input → (validation, PreToolUse hooks, permission: `_admit`, when
the plan says one can act) → the start barrier → the tool under its timeout,
the run's deadline and the declaration audit → its result and hooks
(`_after.settle`). Each stage the tool's plan leaves out is not entered.
"""

from __future__ import annotations

from dataclasses import replace

import anyio

from ..messages import ToolCall, ToolResult
from ..tools import Tool, ToolContext
from ._admit import admit, admit_by
from ._after import settle
from ._answers import Answered, parsed, post_hooks_cut
from ._audit_hook import AuditScope
from ._execute import Executed, execute
from ._lifecycle import Lifecycle
from ._plan import ToolPlan
from ._run_deadline import RunDeadline

__all__ = ["run_staged"]


async def run_staged(lc: Lifecycle, plan: ToolPlan, call: ToolCall) -> ToolResult:
    """Run `call` through the stages its tool's plan holds.

    Raises `CallFailed` / `Answered` for a stage's refusal (the runner words
    it), and cancellation; nothing else.
    """
    tool = plan.tool
    args = parsed(tool, call)
    ctx, reporter = lc.context(call)
    try:
        deadline = lc.deadline
        if plan.admits:
            args = await (
                admit(lc, plan, call, args, ctx)
                if deadline is None
                else admit_by(deadline, lc, plan, call, args, ctx)
            )
        if lc.before_start is not None:
            await lc.pass_barrier(tool, call)
        if deadline is None:
            lc.running(call, tool)
            executed = await _executed(lc, tool, call, args, ctx, plan.timeout)
            return await settle(lc, plan, call, args, executed)
        executed = await _executed_by(deadline, lc, plan, call, args, ctx)
        return await _settle_by(deadline, lc, plan, call, args, executed)
    finally:
        if reporter is not None:
            reporter.close()


async def _executed(
    lc: Lifecycle,
    tool: Tool,
    call: ToolCall,
    args: dict[str, object],
    ctx: ToolContext,
    limit: float | None,
) -> Executed:
    """The tool's call under its timeout `limit` and/or the declaration audit."""
    auditor = lc.auditor
    if auditor.mode == "off":
        return await execute(tool, args, ctx, limit)
    # Auditor.run's steps, inline: no extra coroutine or call per call.
    # With a timeout, execute() abandons the call's threads anyway.
    abandons = True if limit is not None else None
    scope = AuditScope(call.id, tool, args, auditor.enforce, abandons)
    try:
        executed = await execute(tool, args, ctx, limit, zone=scope)
    finally:
        breached = scope.end() and auditor.report(scope, call, lc.on_event)
    if breached:
        executed = auditor.settle(scope, executed)
    return executed


async def _executed_by(
    deadline: RunDeadline,
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    ctx: ToolContext,
) -> Executed:
    """`_executed` bounded by `deadline` too; a call it cut says the deadline did."""
    started = anyio.current_time()
    left = deadline.remaining(started)
    if left <= 0:
        raise Answered(deadline.not_run(call))
    limit = plan.timeout
    bounded = limit is None or left < limit
    lc.running(call, plan.tool)
    executed = await _executed(
        lc, plan.tool, call, args, ctx, left if bounded else limit
    )
    if bounded and executed.timed_out:
        seconds = anyio.current_time() - started
        text = deadline.cut(plan.tool.name, seconds, thread_left=executed.thread_left)
        executed = replace(executed, error=text)
    return executed


async def _settle_by(
    deadline: RunDeadline,
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    executed: Executed,
) -> ToolResult:
    """`settle` within the deadline's grace: the tool ran, so whatever is cut says so.

    Only a successful call can be cut here (at its large result's write, a
    checkpoint): a failed one's hooks answer their own cut with its error.
    """
    with anyio.CancelScope(deadline=deadline.at + deadline.grace) as scope:
        return await settle(lc, plan, call, args, executed)
    assert scope.cancelled_caught
    assert executed.error is None
    # fail closed, as an interrupt in PostToolUse hooks does
    return post_hooks_cut(plan.tool, call, executed.modifier)
