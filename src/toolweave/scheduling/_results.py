"""Results the scheduler writes itself: synthetic answers and runner-fault errors."""

from __future__ import annotations

import dataclasses
import logging

from ..messages import ToolCall, ToolResult

__all__ = [
    "attach_results",
    "coerce_result",
    "fatal_raised",
    "not_run",
    "results_of",
    "runner_failed",
    "stopped_while_running",
    "timed_out",
]

_RESULTS_ATTR = "toolweave_results"

logger = logging.getLogger("toolweave.scheduling")


def not_run(call: ToolCall, why: str) -> ToolResult:
    """The synthetic result of a call that never started."""
    return ToolResult(
        call.id,
        f"Not run: {why}. The tool {call.name!r} was never started.",
        is_error=True,
        synthetic=True,
    )


def stopped_while_running(call: ToolCall, why: str) -> ToolResult:
    """The synthetic result of a call that was cancelled while it ran."""
    return ToolResult(
        call.id,
        f"Cancelled: {why}. The tool {call.name!r} was stopped before it finished;"
        " any effects it had are unknown.",
        is_error=True,
        synthetic=True,
    )


def timed_out(
    call: ToolCall, seconds: float, late: ToolResult | None = None
) -> ToolResult:
    """The synthetic result of a call cut off at the Dispatcher's per-call ceiling.

    `late`: what the call returned after the ceiling had passed (a shielded part
    ran on). The bound holds all the same, as for a tool's own timeout: its
    output is withheld, its context change kept (the work was done).
    """
    if late is None:
        return ToolResult(
            call.id,
            f"Timed out: the call to {call.name!r} did not finish within {seconds:g} s"
            " (the per-call ceiling, `default_tool_timeout`) and was stopped; any"
            " effects it had are unknown.",
            is_error=True,
            synthetic=True,
        )
    return ToolResult(
        call.id,
        f"Timed out: the call to {call.name!r} did not finish within {seconds:g} s"
        " (the per-call ceiling, `default_tool_timeout`); it returned later, past"
        " the ceiling, and its output is withheld.",
        is_error=True,
        synthetic=True,
        context_modifier=late.context_modifier,
    )


def runner_failed(call: ToolCall, exc: BaseException) -> ToolResult:
    """The error result of a runner that raised instead of returning a result.

    Also used for a cancellation exception the runner raised by itself (nothing
    outside cancelled it): that is the tool's error, not a cancellation.
    """
    logger.exception("runner raised for call %s (%s)", call.id, call.name, exc_info=exc)
    return ToolResult(
        call.id,
        f"Error: the tool {call.name!r} failed: {type(exc).__name__}: {exc}",
        is_error=True,
    )


def fatal_raised(call: ToolCall, exc: BaseException) -> ToolResult:
    """The error result of a call whose tool raised KeyboardInterrupt or SystemExit.

    The exception itself is re-raised to the dispatch's caller once every call of
    the batch is answered; this is what the transcript records for the call.
    """
    return ToolResult(
        call.id,
        f"Error: the tool {call.name!r} raised {type(exc).__name__}; the run stops.",
        is_error=True,
    )


def attach_results(exc: BaseException, results: list[ToolResult]) -> BaseException:
    """Attach a batch's results (call order) to the fatal exception that ends it."""
    setattr(exc, _RESULTS_ATTR, results)
    return exc


def results_of(exc: BaseException) -> list[ToolResult] | None:
    """The batch results `Dispatcher.dispatch` attached to a KeyboardInterrupt/SystemExit.

    None if `exc` did not come out of a dispatch. The caller records them (every
    call answered) before letting the exception go on.
    """
    results: list[ToolResult] | None = getattr(exc, _RESULTS_ATTR, None)
    return results


def coerce_result(call: ToolCall, result: object) -> ToolResult:
    """Make sure a runner's return value is this call's ToolResult."""
    if not isinstance(result, ToolResult):
        logger.error("runner returned %r for call %s", type(result).__name__, call.id)
        return ToolResult(
            call.id,
            f"Error: the runner for {call.name!r} returned no result.",
            is_error=True,
        )
    if result.call_id != call.id:
        logger.error("runner returned a result for %s as %s", call.id, result.call_id)
        return dataclasses.replace(result, call_id=call.id)
    return result
