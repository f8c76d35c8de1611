"""The sequential path: a plain loop, used when concurrency is off or a batch has one call.

No task group and no threads of its own: each call runs in the dispatching task,
in order, with the same isolation, interrupt and sibling-abort rules as the
concurrent engine, and context modifiers applied right after each call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import nullcontext

from .._native.cancel import is_fatal
from .._native.deadline import DeadlineScope
from .._native.threads import abandoning_threads
from ..messages import ToolCall, ToolResult
from ..tools import Interrupt
from ._calls import (
    INTERRUPTED,
    Runner,
    at_ceiling,
    fatal_reason,
    fire_completed,
    fire_started,
    invoke,
    prepare,
)
from ._config import ConcurrencyConfig
from ._interrupt import InterruptToken
from ._modifiers import apply_modifiers
from ._request import Request
from ._results import attach_results, fatal_raised, not_run, stopped_while_running

__all__ = ["run_sequential"]

logger = logging.getLogger("toolweave.scheduling")


async def run_sequential(
    calls: Sequence[ToolCall],
    request: Request,
    *,
    config: ConcurrencyConfig,
    prepared: bool = False,
) -> list[ToolResult]:
    """Run `calls` one after another in the calling task; results in call order.

    A tool's KeyboardInterrupt/SystemExit answers its call, leaves the rest not
    run, and is re-raised with the results attached once all are answered.
    """
    results: list[ToolResult] = []
    sibling_failure: str | None = None
    fatal: BaseException | None = None
    interrupt = request.interrupt
    for call in calls:
        tool = request.registry.get(call.name)
        declares_abort = tool is not None and tool.abort_siblings_on_error
        why = _why_not(fatal, interrupt, sibling_failure if declares_abort else None)
        if why is not None:
            result = not_run(call, why)
        else:
            if tool is not None and tool.needs_prepare and not prepared:
                await prepare(tool)
            fire_started(request.on_started, call)
            cancellable = tool is None or tool.interrupt is Interrupt.CANCEL
            try:
                result = await _run_one(
                    call,
                    request.runner,
                    interrupt if cancellable else None,
                    config.ceiling_for(tool.timeout if tool else None),
                )
            except BaseException as exc:
                if not is_fatal(exc):
                    raise
                fatal, result = exc, fatal_raised(call, exc)
            if result.is_error and not result.synthetic and declares_abort:
                sibling_failure = f"sibling {call.name} failed"
        fire_completed(request.on_completed, call, result)
        apply_modifiers([result])
        results.append(result)
    if fatal is not None:
        raise attach_results(fatal, results)
    return results


def _why_not(
    fatal: BaseException | None,
    interrupt: InterruptToken | None,
    sibling_failure: str | None,
) -> str | None:
    """Why the next call must not run, or None if it may.

    A tool's fatal exception, an interrupt, or a failed sibling the call opted
    to abort with (`sibling_failure` is None if it did not opt in).
    """
    if fatal is not None:
        return fatal_reason(fatal)
    if interrupt is not None and interrupt.is_set():
        return INTERRUPTED
    return sibling_failure


async def _run_one(
    call: ToolCall,
    runner: Runner,
    interrupt: InterruptToken | None,
    ceiling: float | None,
) -> ToolResult:
    if interrupt is None:
        return await invoke(runner, call, ceiling)
    result: ToolResult | None = None
    # One scope for both the interrupt and the ceiling (at_ceiling).
    with (
        abandoning_threads() if ceiling is not None else nullcontext(),
        DeadlineScope(ceiling) as scope,
    ):
        unsubscribe = interrupt.subscribe(scope.cancel)
        try:
            result = await invoke(runner, call)
        finally:
            unsubscribe()
    result = at_ceiling(scope, call, result, ceiling)
    return result if result is not None else stopped_while_running(call, INTERRUPTED)
