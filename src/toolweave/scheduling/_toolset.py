"""A context modifier that changes the toolset: classify the later calls again.

The gate classifies each call by the tool its name resolves to when the call
is added. A context modifier may then register, re-register or remove a tool
(`ToolRegistry.generation` counts such changes); serially, every later call
would be looked up after it. So when a modifier changed the toolset, every
later call that has not started is classified again, and the batch's waits
are drawn again from the new plans, before anything waiting for the call that
changed the toolset can start (issue 29, item 4). The runner is then given the
tool each call was classified by (`Request.runner_for`): it runs that tool,
never a second lookup's.

Which later calls may already have started? Only those that did not wait for
the changing call. Every policy makes each call wait for the last earlier
barrier, even one that runs nothing (`_policies`), so after a barrier (an
undeclared SEQUENTIAL tool, the default) none has, but for calls of known
tools declaring they touch nothing (`Access()`), which keep overlapping a
barrier (issue 13). A call that changes the toolset while declaring a narrower
access broke its declaration. Either way the calls that overlapped it ran as
the tool they were classified by, and a warning names those whose name now
resolves to another tool.

A batch whose modifiers change no tool pays one integer comparison per
modifier; one with no modifier pays nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..messages import ToolCall, ToolResult
from ..tools import ToolRegistry
from ._call_record import CallRecord, CallState
from ._gate import CallPlan
from ._modifiers import apply_modifiers
from ._readiness import Readiness

__all__ = ["apply_changed", "reclassify"]

logger = logging.getLogger("toolweave.scheduling")


def apply_changed(result: ToolResult, registry: ToolRegistry) -> bool:
    """Apply `result`'s context modifier; True if it changed the toolset."""
    before = registry.generation
    apply_modifiers([result])
    return registry.generation != before


def reclassify(
    later: Sequence[CallRecord],
    table: Readiness,
    classify: Callable[[ToolCall], CallPlan],
) -> set[int]:
    """Classify again each of `later` that has not started; the indices it did.

    The records' plans and `table.plans` are both replaced; the caller then
    draws the waits again (`Readiness.replan`).
    """
    again: set[int] = set()
    overlapped: list[str] = []
    for record in later:
        if record.state is not CallState.PENDING or record.result is not None:
            if classify(record.call).tool is not record.plan.tool:
                overlapped.append(record.call.ref)
            continue
        record.plan = table.plans[record.index] = classify(record.call)
        again.add(record.index)
    if overlapped:
        logger.warning(
            "a context modifier changed the toolset while calls after it ran"
            " (%s): they ran as classified before the change; a tool that"
            " changes the toolset must be a barrier (undeclared access)",
            ", ".join(overlapped),
        )
    return again
