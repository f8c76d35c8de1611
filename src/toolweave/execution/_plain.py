"""The plain path: a call of a tool no lifecycle stage can act on.

No timeout or deadline, no audit, no hook matching the tool, no
`validate_input` and no permission opinion (`ToolPlan.plain`): the call is
its input, the start barrier and events if the runner has them, the tool
awaited in this frame, and its result, worded by the same `_after.settle`
and `Lifecycle.to_result` as the staged chain's.
"""

from __future__ import annotations

from ..messages import ToolCall, ToolResult
from ._after import settle
from ._answers import parsed
from ._execute import Executed, failure_of, returned
from ._lifecycle import Lifecycle
from ._plan import ToolPlan

__all__ = ["run_plain"]


async def run_plain(lc: Lifecycle, plan: ToolPlan, call: ToolCall) -> ToolResult:
    """Run `call` on the plain path; raises as `run_staged` does (a refusal, cancellation)."""
    tool = plan.tool
    args = parsed(tool, call)
    ctx, reporter = lc.context(call)
    try:
        if lc.before_start is not None:
            await lc.pass_barrier(tool, call)
        lc.running(call, tool)
        executed: Executed
        try:
            output = await tool.call(args, ctx)
        except BaseException as exc:
            failed = failure_of(tool, exc)  # None: a real cancellation
            if failed is None:
                raise
            executed = failed
        else:
            if type(output) is str:  # most tools: nothing for settle to unwrap
                return await lc.to_result(tool, call, output, None)
            executed = returned(output)
        return await settle(lc, plan, call, args, executed)
    finally:
        if reporter is not None:
            reporter.close()
