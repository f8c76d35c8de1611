"""The two-layer gate: may this call overlap others, and what does it touch?

Layer 1 (intent + config) is decided per batch by the Dispatcher: enabled, and two
or more calls. Layer 2 (safety) is decided here per call: the call resolves, its
input validates, it is SAFE, not hidden, and its interrupt behaviour allows
parallel running. Anything unsure fails closed: the call becomes a barrier.

One case is sure rather than unsure: a call whose tool is unknown, or whose input
fails schema validation (or is not JSON), provably runs no code — the lifecycle
answers it with an error before any hook, permission check or tool body — so it is
no barrier: it touches nothing and may overlap anything (issue 13, item 6). A
validator or classifier that *raised* is different: something ran and misbehaved,
so that call still fails closed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from .._exceptions import ToolInputError
from ..messages import ToolCall
from ..tools import Access, Concurrency, Interrupt, Tool, ToolRegistry, Warrant

__all__ = ["CallPlan", "classify", "starts_early", "warm"]

logger = logging.getLogger("toolweave.scheduling")


@dataclass(slots=True)
class CallPlan:
    """What the gate decided about one call. Read-only once made.

    Not a frozen dataclass only because one is made per call and a frozen
    one's constructor costs several times as much; nothing mutates a plan.
    """

    tool: Tool | None
    """The resolved tool, or None for a hallucinated name."""
    args: dict[str, object] | None
    """The validated input, or None if it did not validate."""
    parallel_ok: bool
    """Layer 2 passed: the call may overlap other parallel-ok calls."""
    access: Access
    """What the call claims to touch (a barrier when undeclared or unresolvable)."""
    reason: str = ""
    """Why the call is not parallel-ok, or why it runs nothing, in words."""
    runs_nothing: bool = False
    """The call provably runs no code (unknown tool, input that fails its schema).

    Its runner only writes the error result, so it is parallel-ok and touches
    nothing: it need not serialize the batch around it.
    """

    @property
    def interrupt(self) -> Interrupt:
        """The tool's interrupt behaviour; a call with no tool can always be cancelled."""
        return self.tool.interrupt if self.tool is not None else Interrupt.CANCEL


def _exclusive(
    tool: Tool | None, args: dict[str, object] | None, reason: str
) -> CallPlan:
    return CallPlan(tool, args, False, Access.barrier(), reason)


def _runs_nothing(tool: Tool | None, reason: str) -> CallPlan:
    return CallPlan(tool, None, True, Access(), reason, runs_nothing=True)


async def warm(call: ToolCall, registry: ToolRegistry) -> None:
    """Let the call's tool do its costly declaration work off the loop, first.

    Awaited before `classify`, which is synchronous (it runs as each call is
    submitted): a tool whose `concurrency_for` parses its input (bash) parses
    it here on a worker thread, and the gate then finds the verdict cached.
    Never raises: a failing warm-up leaves the work to the gate, which is
    bounded and fails closed anyway.
    """
    tool = registry.get(call.name)
    if tool is None or call.raw_arguments is not None or not tool.needs_warming:
        return
    try:
        await tool.warm_declarations(call.input)
    except Exception:
        logger.warning(
            "warming the declarations of %r raised", call.name, exc_info=True
        )


def classify(call: ToolCall, registry: ToolRegistry) -> CallPlan:
    """Apply Layer 2 of the gate to one call. Never raises.

    A sync tool that declares CANCEL is not parallel-ok: its worker thread cannot
    be stopped, so after an interrupt it would keep running beside the calls that
    follow it (the Python analogue of a THREAD_INTERRUPT exclusion).
    """
    tool = registry.get(call.name)
    if tool is None:
        return _runs_nothing(None, f"unknown tool {call.name!r}")
    if call.raw_arguments is not None:
        return _runs_nothing(tool, "arguments are not valid JSON")
    try:
        args = tool.parse(call.input)
    except ToolInputError:
        return _runs_nothing(tool, "invalid input")
    except Exception:
        return _exclusive(tool, None, "input validation raised")
    if tool.hidden:
        return _exclusive(tool, args, "hidden tools never run in parallel")
    concurrency = tool.concurrency_for(args)
    declared = tool.access_for(args)
    if concurrency is not Concurrency.SAFE:
        access = declared if declared is not None else Access.barrier()
        return CallPlan(tool, args, False, access, "SEQUENTIAL")
    if tool.runs_in_thread and tool.interrupt is Interrupt.CANCEL:
        return _exclusive(tool, args, "a thread cannot honour CANCEL in parallel")
    access = declared if declared is not None else Access.read_all()
    return CallPlan(tool, args, True, access)


def starts_early(plan: CallPlan, *, audit_enforced: bool = False) -> bool:
    """May this call start while its model response still streams? Never raises.

    The response may yet be retried or cut at ``max_tokens``, and a call
    started from it has run all the same. So beyond passing the gate
    (`CallPlan.parallel_ok`) the call must claim no write and its claim must
    be vouched for (`Tool.warrant`): yours, or one toolweave enforces;
    `Warrant.AUDITED` only when `audit_enforced` (the runner enforces the
    declaration audit). A call that provably runs nothing may always start.
    Everything else waits for the final response, and then overlaps as its
    plan says.
    """
    if not plan.parallel_ok:
        return False
    if plan.runs_nothing:
        return True
    tool = plan.tool
    if tool is None or plan.access.writes:
        return False
    try:
        warrant = tool.warrant
    except Exception:
        logger.exception("the warrant of %r raised; it does not start early", tool)
        return False
    return (
        warrant is Warrant.USER
        or warrant is Warrant.ENFORCED
        or (audit_enforced and warrant is Warrant.AUDITED)
    )
