"""Before the tool starts: `validate_input`, PreToolUse hooks, the permission stage.

Only the staged chain enters here, and only for a tool whose plan says one
of these stages can act (`ToolPlan.admits`).
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio

from ..messages import ToolCall
from ..tools import Tool, ToolContext
from ._answers import PRE_HOOKS_CUT, Answered, cut_before_start
from ._decision import HookVerdict
from ._hook_stage import run_pre_hooks
from ._lifecycle import Lifecycle
from ._plan import ToolPlan
from ._run_deadline import RunDeadline
from ._scope import rewrite_scope_error
from ._signals import CallFailed

__all__ = ["admit", "admit_by"]


async def admit(
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    ctx: ToolContext,
) -> dict[str, object]:
    """Validation, PreToolUse hooks, permission: the input the call may run with.

    Raises `CallFailed` or `Answered` when a stage refuses the call.
    """
    tool = plan.tool
    if plan.validates:
        await _validate(tool, args, ctx)
    verdict: HookVerdict | None = None
    if plan.pre:
        args, verdict = await _pre_hooks(plan, call, args, ctx, lc)
    if not lc.gate.allows_at_once(tool, verdict):
        await lc.gate.authorize(tool, call, args, ctx, verdict)
    return args


async def admit_by(
    deadline: RunDeadline,
    lc: Lifecycle,
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    ctx: ToolContext,
) -> dict[str, object]:
    """`admit`, cut at `deadline`: a call cut before it started is answered "not run"."""
    with anyio.CancelScope(deadline=deadline.at) as scope:
        try:
            return await admit(lc, plan, call, args, ctx)
        except Answered:  # a stage's own answer to the cut: say why it came
            if not scope.cancel_called:
                raise
        except CallFailed as failed:  # the permission stage's own "not run"
            if not (failed.synthetic and scope.cancel_called):
                raise
    raise Answered(deadline.not_run(call))


async def _validate(tool: Tool, args: dict[str, object], ctx: ToolContext) -> None:
    try:
        problem = await tool.validate_input(args, ctx)
    except Exception as exc:
        raise CallFailed(f"Invalid input for tool {tool.name!r}: {exc}") from exc
    if problem is not None:
        raise CallFailed(problem)


async def _pre_hooks(
    plan: ToolPlan,
    call: ToolCall,
    args: dict[str, object],
    ctx: ToolContext,
    lc: Lifecycle,
) -> tuple[dict[str, object], HookVerdict | None]:
    tool, scheduled = plan.tool, args

    async def revalidate(raw: Mapping[str, object]) -> dict[str, object]:
        try:
            new = tool.parse(raw)
        except Exception as exc:
            raise CallFailed(
                f"A PreToolUse hook rewrote the input into an invalid one: {exc}"
            ) from exc
        problem = rewrite_scope_error(tool, scheduled, new)
        if problem is not None:
            raise CallFailed(
                f"A PreToolUse hook's input rewrite was refused: {problem}."
            )
        await _validate(tool, new, ctx)
        return new

    try:
        return await run_pre_hooks(
            plan.pre, call, tool.name, args, signals=lc.signals, revalidate=revalidate
        )
    except anyio.get_cancelled_exc_class():
        # Cut before the tool started: say so (not "effects unknown").
        # Level-triggered: an outer cancel fires again at the caller's
        # next checkpoint.
        raise cut_before_start(PRE_HOOKS_CUT, tool, call) from None
