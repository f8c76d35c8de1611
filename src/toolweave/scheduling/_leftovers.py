"""After admission: answering the calls a batch never admitted, and the harvest.

Admission can end before every call started: an interrupt, a discarded stream,
a tool's fatal exception, or a close. What is left is answered here, once
every admitted call settled. A close that wins the race runs the rest on the
dispatch's caller, one by one (seed 000 §3); everything else gets its
synthetic 'not run' (or 'cancelled', for a call a forced close cut) result.
Then `harvest` hands back one result per call, in call order.
"""

from __future__ import annotations

import dataclasses

import anyio

from ..messages import ToolCall, ToolResult
from ._batch import Batch
from ._call_record import CallRecord, CallState
from ._calls import CLOSED, fire_started
from ._results import attach_results, not_run, stopped_while_running
from ._sequential import run_sequential

__all__ = ["finish_batch", "harvest", "results_in_order"]


async def finish_batch(batch: Batch) -> None:
    """Settle the calls admission never reached.

    Context modifiers were applied as each call finished (issue 13, item 4);
    calls run here on the caller apply theirs the same way.
    """
    if batch.stop == CLOSED and not batch.forced:
        # seed 000 §3: a close that wins the race runs the rest on the caller.
        for record in batch.records:
            if record.result is None:
                await _run_on_caller(batch, record)
    elif not batch.all_answered:
        _settle_cancelled(batch)
        why = batch.stop or "internal error"
        for record in batch.records:
            if record.result is None:  # never admitted
                batch.settle(record, not_run(record.call, record.why or why))


def harvest(batch: Batch) -> list[ToolResult]:
    """The results in call order; re-raises a tool's KeyboardInterrupt/SystemExit.

    The fatal exception leaves with the results attached (`results_of`), so
    the caller can record every answered call before it goes on.
    """
    results = results_in_order(batch)
    if batch.fatal is not None:
        raise attach_results(batch.fatal, results)
    return results


def results_in_order(batch: Batch) -> list[ToolResult]:
    """The results in call order; a call left without one is an internal error."""
    return [
        record.result
        if record.result is not None
        else not_run(record.call, "internal error")
        for record in batch.records
    ]


def _settle_cancelled(batch: Batch) -> None:
    """Answer the admitted calls whose tasks a forced close cancelled."""
    for record in batch.records:
        if record.result is not None:
            continue
        if record.state is CallState.RUNNING:
            batch.settle(record, stopped_while_running(record.call, CLOSED))
        elif record.state is CallState.ADMITTED:
            batch.settle(record, not_run(record.call, CLOSED))


async def _run_on_caller(batch: Batch, record: CallRecord) -> None:
    call = record.call
    if batch.forced:
        batch.settle(record, not_run(call, CLOSED))
        return
    started: list[ToolCall] = []
    listener = batch.request.on_started

    def on_started(started_call: ToolCall) -> None:
        started.append(started_call)
        fire_started(listener, started_call, record.plan.access)

    # on_completed fires once, when the batch records the result
    request = dataclasses.replace(
        batch.request, on_started=on_started, on_completed=None
    )
    results: list[ToolResult] = []
    with anyio.CancelScope() as batch.fallback_scope:
        results = await run_sequential([call], request, config=batch.config)
    batch.fallback_scope = None
    if results:
        result = results[0]
    else:  # a forced close cancelled it
        result = (
            stopped_while_running(call, CLOSED) if started else not_run(call, CLOSED)
        )
    batch.settle(record, result, ran=bool(started))
