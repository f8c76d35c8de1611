"""The batch engine: plans one batch's calls in order and starts each when it is ready.

This module is the one place where toolweave decides what overlaps. Its
invariants, each tested:

* results are kept by index (a call's position, never its id), so the list
  comes back in call order whatever the completion order, duplicate ids
  included;
* a call is *ready* once every earlier call its policy makes it wait for has
  finished (and its readiness step ran); only a ready call takes slots, so a
  waiting call never holds one (issue 13, item 5);
* among ready calls, slots go in call order; `on_started` fires from the
  admitting task right after a call's slots are taken and before it runs
  (STYLE E1: the parent owns the order);
* a call's context modifier is applied the moment it finishes, before any call
  that waits for it can start, so the outcome equals serial execution for
  declared conflicts, context changes included (issue 13, item 4); one that
  changes the toolset has the calls after it classified again (`_toolset`);
* `on_completed` fires as each call finishes (completion order);
* every call gets exactly one result; a call that did not run to the end gets a
  synthetic one (`is_error=True, synthetic=True`);
* slots are released in a `finally`, so no exit path leaks one.

The parts: one `CallRecord` per call (`_call_record`), the waits in a pure
`Readiness` table (`_readiness`), and here the admission loop, one coroutine
per call (`_run`) and the epilogue every answer goes through (`settle`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

import anyio

from .._native.cancel import is_fatal
from .._native.deadline import DeadlineScope
from .._native.spawn import Spawner
from ..messages import ToolCall, ToolResult
from ._call_record import CallRecord, CallScopes, CallState
from ._calls import (
    CLOSED,
    DISCARDED,
    INTERRUPTED,
    cancellable,
    fatal_reason,
    fire_completed,
    fire_started,
    prepare,
)
from ._config import ConcurrencyConfig
from ._gate import CallPlan, starts_early
from ._host import Host
from ._latch import Latch
from ._policies import new_planner
from ._readiness import Readiness
from ._request import Request
from ._results import fatal_raised, not_run, stopped_while_running
from ._slots import Slots
from ._toolset import apply_changed, reclassify

__all__ = ["Batch"]

logger = logging.getLogger("toolweave.scheduling")

_RUNNING, _ADMITTED = CallState.RUNNING, CallState.ADMITTED


class Batch:
    """One dispatch (or one streamed response) on a Dispatcher.

    Attributes:
        request: What the dispatch runs with (registry, runner, listeners).
        config: The Dispatcher's configuration.
        records: One record per call submitted so far, in call order.
        settled: Set once admission is over and every admitted call's task ended.
        final: True once `finish` was called: no more calls will come.
        stop: Why admission stopped early: interrupted, closed, or discarded.
        forced: True if running calls were cancelled because the dispatcher closed.
        scope: The whole batch's scope (dispatch batches): a forced close cancels it.
        fallback_scope: The scope of a call the close fallback runs on the
            caller (`force_close` cancels it).
        fatal: The first KeyboardInterrupt/SystemExit a call raised; re-raised
            once every call is answered.

    Loop affinity: one event loop; `submit`, `finish` and the interrupt, close and
    discard methods are synchronous and must be called from that loop's thread.
    """

    def __init__(
        self,
        host: Host,
        request: Request,
        config: ConcurrencyConfig,
        *,
        eager: bool,
        selective: bool,
        audit_enforced: bool = False,
    ) -> None:
        self.request = request
        self.config = config
        self._host = host
        planner = new_planner(config.policy)
        self._early = (
            partial(starts_early, audit_enforced=audit_enforced)
            if eager and planner.incremental
            else None
        )
        cap = config.max_abandoned_threads
        self._classify = partial(host.classify, request.registry, cap)
        self._slots = Slots(config.batch_cap)
        self.records: list[CallRecord] = []
        self._table = Readiness(planner)
        self._scopes = CallScopes(self.records, config, selective)
        self._tg: Spawner | None = None
        self._wake: anyio.Event | None = None
        self._admission: DeadlineScope | None = None
        self._dispatched = self._outstanding = self._answered = 0
        self.settled = Latch()
        self._admission_over = False
        self._sibling_failure: str | None = None
        self.final = False
        self.stop: str | None = None
        self.forced = False
        self.scope: DeadlineScope | None = None
        self.fallback_scope: anyio.CancelScope | None = None
        self.fatal: BaseException | None = None

    # -- feeding -------------------------------------------------------------

    def attach(self, tg: Spawner) -> None:
        """Give the batch the task group its calls run in (on the loop it runs on)."""
        self._tg = tg
        self._scopes.bind()

    def release(self) -> None:
        """The batch is over: forget its ceilings' alarm entry (`CallScopes.close`)."""
        self._scopes.close()

    def submit(self, call: ToolCall) -> None:
        """Add the next call (in call order). Never blocks, never raises for bad calls."""
        self._add(call)
        if self._wake is not None:
            self._poke()

    def submit_all(self, calls: list[ToolCall]) -> None:
        """`submit` each of `calls`, in order (a whole response at once)."""
        for call in calls:
            self._add(call)
        self._poke()

    def _add(self, call: ToolCall) -> None:
        plan = self._classify(call)
        tool, index = plan.tool, self._table.add(plan)
        record = CallRecord(index, call, plan)
        self.records.append(record)
        self._host.waiting += 1
        if tool is None:
            return
        if tool.abort_siblings_on_error:
            self._scopes.selective = True
            record.why = self._sibling_failure
        if tool.needs_prepare and self._tg is not None:
            self._table.needs_preparing(index)
            self._tg.start_soon(self._prepare, record)

    def finish(self) -> None:
        """No more calls will come: the response is final."""
        self.final = True
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    async def _prepare(self, record: CallRecord) -> None:
        # seed 001: readiness waits happen outside the gate, before any slot.
        assert record.plan.tool is not None
        try:
            await prepare(record.plan.tool)
        finally:
            if self._table.prepared(record.index):
                self._poke()

    # -- admission (the dispatching task) -------------------------------------

    async def admit_all(self) -> None:
        """Start ready calls, in call order among them, until all started or stopped."""
        # No cancel scope around the loop (one per batch was a measurable share
        # of a small batch): a halt sets `stop` and pokes the wake event, and
        # cancels the one wait that needs it, for slots (`_admission`).
        while self.stop is None:
            # Planned in the admitting task: it need not be woken for what it readies.
            self._table.plan_through(final=self.final, early=self._early)
            if self._table.first() >= 0:
                if not self._start_ready():
                    await self._wait_for_slots()
                continue
            if self.final and self._dispatched == len(self.records):
                break
            self._wake = wake = anyio.Event()
            await wake.wait()
        self._wake = None
        self._admission_over = True
        self._check_settled()

    def _start_ready(self) -> bool:
        """Start ready calls, lowest first, while slots are free; False if one must wait.

        Synchronous: a burst finding free slots starts with no checkpoint or coroutine.
        """
        slots, host_slots = self._slots, self._host.slots
        while self.stop is None:
            if self._next_runnable() < 0:
                break
            if not slots.try_take_with(host_slots):
                return False
            self._start(self.records[self._table.take()])
        return True

    async def _wait_for_slots(self) -> None:
        """Wait for slots, then start the lowest ready call (which may have changed meanwhile)."""
        # DeadlineScope: on asyncio a native scope, cheaper than anyio's per wait
        with DeadlineScope() as self._admission:
            await self._host.acquire(self._slots)
        cut = self._admission.cancelled_caught  # then no slot was taken
        self._admission = None
        if cut:
            return
        # While we waited: a halt may have come, or a lower call become ready.
        if self.stop is not None or self._next_runnable() < 0:
            self._slots.give_with(self._host.slots)
            return
        self._start(self.records[self._table.take()])

    def _next_runnable(self) -> int:
        """The lowest ready call that may run, or -1; ready calls that may not are answered.

        A call may not run once it has a `why` (a sibling it opted to abort with
        failed): it is dispatched as 'not run', freeing what waits for it.
        """
        table = self._table
        index = table.first()
        while index >= 0 and self.records[index].why is not None:
            record = self.records[table.take()]
            self._dispatched += 1
            self.settle(record, not_run(record.call, record.why or ""))
            index = table.first()
        return index

    def _start(self, record: CallRecord) -> None:
        """Start the call of `record`, whose slots are taken."""
        assert self._tg is not None
        self._dispatched += 1
        record.state = _ADMITTED
        self._outstanding += 1
        fire_started(self.request.on_started, record.call, record.plan.access)
        task = self._tg.start_soon(self._run, record)
        record.task = task if isinstance(task, asyncio.Task) else None

    # -- one call ------------------------------------------------------------------

    async def _run(self, record: CallRecord) -> None:
        """One call's task: its runner under its scope, then the epilogue (`_answer`)."""
        host = self._host
        result: ToolResult | None = None
        fatal: BaseException | None = None
        try:
            if record.why is None:
                record.state = _RUNNING
                host.running += 1
                host.waiting -= 1
                try:
                    runner = self.request.runner_for(record.plan.tool)
                    result = await self._scopes.run(record, runner)
                finally:
                    host.running -= 1
        except BaseException as exc:
            if not is_fatal(exc):
                raise  # a real cancellation: `finish_batch` answers the call
            # Caught here, in the call's own task, so it never reaches the task
            # group (no BaseExceptionGroup on trio, no event-loop abort on asyncio).
            fatal, result = exc, fatal_raised(record.call, exc)
        finally:
            record.scope = None
            self._slots.give_with(host.slots)
        if fatal is not None:
            self._on_fatal(fatal)
        self._answer(record, result)

    def _answer(self, record: CallRecord, result: ToolResult | None) -> None:
        """A call's task ends: its result, or a synthetic one saying why it has none."""
        if result is not None:
            if result.context_modifier is not None and self.stop != DISCARDED:
                self._apply(record.index, result)
        elif record.state is _RUNNING:
            result = stopped_while_running(record.call, record.why or "cancelled")
        else:
            result = not_run(record.call, record.why or "cancelled")
        self.settle(record, result)
        self._outstanding -= 1
        if self._admission_over and not self._outstanding:
            self._check_settled()

    def _apply(self, index: int, result: ToolResult) -> None:
        """Apply a call's context change; a new toolset reclassifies what did not start."""
        if apply_changed(result, self.request.registry):
            again = reclassify(self.records[index + 1 :], self._table, self._classify)
            self._table.replan(new_planner(self.config.policy), again)

    def settle(
        self, record: CallRecord, result: ToolResult, *, ran: bool = False
    ) -> None:
        """Record a call's answer and free what waits for it: every answer ends here.

        `ran`: the call ran outside the engine (on the dispatch's caller, after
        a close). A call answered before it entered its runner here stops
        counting as waiting.
        """
        state = record.state
        if state is CallState.PENDING or state is _ADMITTED:
            self._host.waiting -= 1
        if record.result is None:
            self._answered += 1
        record.result = result
        started = ran or state is not CallState.PENDING
        ran = ran or state is _RUNNING or state is CallState.RAN
        record.state = CallState.RAN if ran else CallState.DONE
        listener = self.request.on_completed
        if listener is not None and (self.stop != DISCARDED or started):
            fire_completed(listener, record.call, result)
        if result.is_error and not result.synthetic:
            tool = record.plan.tool
            if tool and tool.abort_siblings_on_error:
                why = self._sibling_failure = f"sibling {record.call.name} failed"
                self._scopes.cut_siblings(why)
        if self._table.finish(record.index):
            self._poke()

    @property
    def all_answered(self) -> bool:
        """True once every call submitted so far has its result."""
        return self._answered == len(self.records)

    def _check_settled(self) -> None:
        if self._admission_over and self._outstanding == 0:
            self.settled.set()

    # -- stopping ------------------------------------------------------------------

    def _on_fatal(self, exc: BaseException) -> None:
        # Stop like a user interrupt: what may be cancelled is, the rest is answered.
        if self.fatal is None:
            self.fatal = exc
            self.halt(fatal_reason(exc), cancel_running=cancellable)

    def halt(self, why: str, *, cancel_running: Callable[[CallPlan], bool]) -> None:
        """Stop admitting; cancel waiting calls and the running ones `cancel_running` picks."""
        if self.stop is None:
            self.stop = why
        self._stop_admission()
        self._scopes.cut_where(why, cancel_running)

    def _stop_admission(self) -> None:
        """Wake the admitting task (it sees `stop`); cut its wait for slots if any."""
        self._poke()
        if self._admission is not None:
            self._admission.cancel()

    def interrupt(self) -> None:
        """User interrupt: CANCEL calls stop, BLOCK calls run on, the rest never start."""
        self.halt(INTERRUPTED, cancel_running=cancellable)

    def discard(self) -> None:
        """Throw the attempt away: like an interrupt, but nothing will be harvested."""
        self.halt(DISCARDED, cancel_running=cancellable)

    def close(self) -> None:
        """The dispatcher is closing: admit nothing more; what is admitted runs on."""
        if self.stop is None:
            self.stop = CLOSED
        self._stop_admission()

    def force_close(self) -> None:
        """The drain timed out: cancel everything still running."""
        self.forced = True
        self.halt(CLOSED, cancel_running=lambda plan: True)
        for scope in (self.scope, self.fallback_scope):
            if scope is not None:
                scope.cancel()

    @property
    def touched(self) -> bool:
        """True once a call was admitted or answered: its events were emitted."""
        return self._dispatched > 0 or self._answered > 0
