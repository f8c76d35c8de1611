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
  declared conflicts, context changes included (issue 13, item 4);
* `on_completed` fires as each call finishes (completion order);
* every call gets exactly one result; a call that did not run to the end gets a
  synthetic one (`is_error=True, synthetic=True`);
* slots are released in a `finally`, so no exit path leaks one.
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from ..messages import ToolCall, ToolResult
from ..tools import Access, Interrupt, ToolRegistry
from ..tools._cancel import is_fatal
from ..tools._deadline import DeadlineScope, native_alarm
from ._calls import (
    CLOSED,
    DISCARDED,
    INTERRUPTED,
    CompletedListener,
    Runner,
    StartedListener,
    at_ceiling,
    fatal_reason,
    fault_result,
    fire_completed,
    fire_started,
    guarded,
    invoke,
)
from ._ceilings import Ceilings
from ._config import ConcurrencyConfig
from ._gate import CallPlan, classify, starts_early
from ._modifiers import apply_modifiers
from ._policies import Planner
from ._results import (
    attach_results,
    coerce_result,
    fatal_raised,
    not_run,
    stopped_while_running,
)
from ._slots import Slots
from ._spawn import Spawner

if TYPE_CHECKING:
    from ._dispatcher import _Host

__all__ = [
    "CLOSED",
    "DISCARDED",
    "INTERRUPTED",
    "Batch",
    "CompletedListener",
    "Runner",
    "StartedListener",
    "fatal_reason",
    "fire_completed",
    "fire_started",
    "invoke",
]

logger = logging.getLogger("toolweave.scheduling")


class _State(enum.Enum):
    PENDING = "pending"
    ADMITTED = "admitted"
    RUNNING = "running"
    RAN = "ran"  # answered after its runner was entered (it ran, or was cut)
    DONE = "done"  # answered without running


class Batch:
    """One dispatch (or one streamed response) on a Dispatcher.

    Loop affinity: one event loop; `submit`, `finish` and the interrupt, close and
    discard methods are synchronous and must be called from that loop's thread.
    """

    def __init__(
        self,
        host: _Host,
        registry: ToolRegistry,
        runner: Runner,
        planner: Planner,
        *,
        on_started: StartedListener | None,
        on_completed: CompletedListener | None,
        config: ConcurrencyConfig,
        eager: bool,
        selective: bool,
        audit_enforced: bool = False,
    ) -> None:
        self._host = host
        self._registry = registry
        self._runner = runner
        self._planner = planner
        self._on_started = on_started
        self._on_completed = on_completed
        self._eager = eager and planner.incremental
        self._audit_enforced = audit_enforced
        self._selective = selective
        self._config = config
        self._ceiling = config.default_tool_timeout
        self._slots = Slots(config.batch_cap)
        self.calls: list[ToolCall] = []
        self.plans: list[CallPlan] = []
        self.results: list[ToolResult | None] = []
        self._finished: list[bool] = []
        self._state: list[_State] = []
        self._scopes: list[DeadlineScope | None] = []
        # each call's asyncio Task once started (None on other backends)
        self._tasks: list[asyncio.Task[object] | None] = []
        # asyncio with native scopes: a call's scope is made only when it must be
        # cut (DeadlineScope.adopt), and its ceiling is kept by `_ceilings`
        self._lazy = False
        self._ceilings: Ceilings | None = None
        self._why: list[str | None] = []
        # readiness: unfinished dependencies, who waits for whom, readiness steps
        self._blockers: list[int] = []
        self._dependents: list[list[int] | None] = []  # None: nobody waits for it
        self._prepared: list[bool] = []
        self._queued: list[bool] = []
        self._ready: list[int] = []  # a heap of ready, not yet started indices
        self._planned = 0
        self._dispatched = 0
        self._tg: Spawner | None = None
        self._wake: anyio.Event | None = None
        self._admission: DeadlineScope | None = None
        self._outstanding = 0
        self._answered = 0  # calls with a result
        self._settled: anyio.Event | None = None  # made only if someone waits
        self._is_settled = False
        self._admission_over = False
        self._sibling_failure: str | None = None
        self.final = False
        self.stop: str | None = None
        """Why admission stopped early: interrupted, closed, or discarded."""
        self.forced = False
        """True if running calls were cancelled because the dispatcher closed."""
        self.scope: DeadlineScope | None = None
        """The whole batch's scope (dispatch batches): a forced close cancels it."""
        self.fallback_scope: anyio.CancelScope | None = None
        """Scope of a call the close fallback runs on the caller (force_close cancels it)."""
        self.fatal: BaseException | None = None
        """The first KeyboardInterrupt/SystemExit a call raised; re-raised once all are answered."""

    @property
    def on_started(self) -> StartedListener | None:
        """The batch's on_started listener."""
        return self._on_started

    # -- feeding -------------------------------------------------------------

    def attach(self, tg: Spawner) -> None:
        """Give the batch the task group its calls run in (on the loop it runs on)."""
        self._tg = tg
        alarm = native_alarm()
        self._lazy = alarm is not None
        if alarm is not None and self._config.default_tool_timeout is not None:
            self._ceilings = Ceilings(alarm, self._cut_at_ceiling, self._in_call)

    def release(self) -> None:
        """The batch is over: forget its ceilings' alarm entry.

        Also drops the `Ceilings`, whose callbacks are the batch's own methods:
        a cycle that would leave the whole batch to the garbage collector.
        """
        if self._ceilings is not None:
            self._ceilings.close()
            self._ceilings = None

    def submit(self, call: ToolCall) -> None:
        """Add the next call (in call order). Never blocks, never raises for bad calls."""
        self._grow(1)
        self._add(call)
        if self._wake is not None:
            self._poke()

    def submit_all(self, calls: list[ToolCall]) -> None:
        """`submit` each of `calls`, in order (a whole response at once)."""
        self._grow(len(calls))
        for call in calls:
            self._add(call)
        self._poke()

    def _grow(self, n: int) -> None:
        """Make room in the per-call tables for `n` more calls."""
        self.results += [None] * n
        self._finished += [False] * n
        self._state += [_State.PENDING] * n
        self._scopes += [None] * n
        self._tasks += [None] * n
        self._why += [None] * n
        self._blockers += [0] * n
        self._dependents += [None] * n
        self._queued += [False] * n
        self._prepared += [True] * n
        self._host.waiting += n

    def _add(self, call: ToolCall) -> None:
        index = len(self.calls)
        plan = classify(call, self._registry)
        tool = plan.tool
        self.calls.append(call)
        if tool is None:
            self.plans.append(plan)
            return
        if tool.runs_in_thread:
            plan = self._threads_cap(plan)
        self.plans.append(plan)
        if tool.abort_siblings_on_error:
            self._selective = True
            if self._sibling_failure:
                self._why[index] = self._sibling_failure
        if tool.needs_prepare and self._tg is not None:
            self._prepared[index] = False
            self._tg.start_soon(self._prepare, index)

    def _threads_cap(self, plan: CallPlan) -> CallPlan:
        # issue 13 item 3: too many abandoned threads → sync tools run exclusive.
        tool = plan.tool
        if (
            tool is None
            or not tool.runs_in_thread
            or plan.runs_nothing
            or self._host.threads.abandoned_now < self._config.max_abandoned_threads
        ):
            return plan
        why = "too many abandoned worker threads: sync tools run exclusive"
        return CallPlan(tool, plan.args, False, Access.barrier(), why)

    def finish(self) -> None:
        """No more calls will come: the response is final."""
        self.final = True
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    async def _prepare(self, index: int) -> None:
        # seed 001: readiness waits happen outside the gate, before any slot.
        tool = self.plans[index].tool
        try:
            assert tool is not None
            await tool.prepare()
        except Exception:
            logger.exception(
                "readiness step of %r failed; the call will report it", tool
            )
        finally:
            self._prepared[index] = True
            self._check_ready(index)

    # -- readiness ------------------------------------------------------------

    def _plan_admissible(self) -> None:
        """Draw the dependencies of every call that may be planned now, in call order.

        A call may be planned once the response is final, or (eager batches)
        while it streams if it may start early (`starts_early`); the first that
        may not holds back every later call until the response is final.
        """
        plans = self.plans
        index = self._planned
        if index >= len(plans):
            return
        final, eager, audited = self.final, self._eager, self._audit_enforced
        deps_of, finished, dependents = (
            self._planner.deps,
            self._finished,
            self._dependents,
        )
        blockers, prepared, queued, ready = (
            self._blockers,
            self._prepared,
            self._queued,
            self._ready,
        )
        # Runs in the admitting task, so it need not wake it for what it queues.
        while index < len(plans) and (
            final or (eager and starts_early(plans[index], audit_enforced=audited))
        ):
            self._planned = index + 1
            waiting = 0
            for dep in deps_of(index, plans):
                if not finished[dep]:
                    waiting += 1
                    waiters = dependents[dep]
                    if waiters is None:
                        dependents[dep] = [index]
                    else:
                        waiters.append(index)
            blockers[index] = waiting
            if not waiting and prepared[index] and not queued[index]:
                queued[index] = True
                heapq.heappush(ready, index)
            index += 1

    def _check_ready(self, index: int) -> None:
        if (
            index < self._planned
            and self._blockers[index] == 0
            and self._prepared[index]
            and not self._queued[index]
        ):
            self._queued[index] = True
            heapq.heappush(self._ready, index)
            if self._wake is not None:
                self._poke()

    # -- admission (the dispatching task) -------------------------------------

    async def admit_all(self) -> None:
        """Start ready calls, in call order among them, until all started or stopped."""
        # No cancel scope around the loop (one per batch was a measurable share
        # of a small batch): a halt sets `stop` and pokes the wake event, and
        # cancels the one wait that needs it, for slots (`_admission`).
        while self.stop is None:
            self._plan_admissible()
            if self._ready:
                if not self._start_ready():
                    await self._wait_for_slots()
                continue
            if self.final and self._dispatched == len(self.calls):
                break
            self._wake = wake = anyio.Event()
            await wake.wait()
        self._wake = None
        self._admission_over = True
        self._check_settled()

    def _start_ready(self) -> bool:
        """Start ready calls, lowest first, while slots are free; False if one must wait.

        Synchronous: a burst of calls that find slots free starts without a
        checkpoint or a coroutine per call.
        """
        ready = self._ready
        slots, host_slots = self._slots, self._host.slots
        while ready and self.stop is None:
            if self._why[ready[0]] is not None and self._skip_ready():
                break
            if not slots.try_take_with(host_slots):
                return False
            self._start(heapq.heappop(ready))
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
        if self.stop is not None or self._skip_ready():
            self._slots.give_with(self._host.slots)
            return
        self._start(heapq.heappop(self._ready))

    def _start(self, index: int) -> None:
        """Start the call at `index`, whose slots are taken."""
        assert self._tg is not None
        self._dispatched += 1
        self._state[index] = _State.ADMITTED
        self._outstanding += 1
        if self._on_started is not None:
            fire_started(self._on_started, self.calls[index], self.plans[index].access)
        task = self._tg.start_soon(self._run, index)
        self._tasks[index] = task if isinstance(task, asyncio.Task) else None

    def _skip_ready(self) -> bool:
        """Answer ready calls that must not run (a sibling failed); True if none is left."""
        while self._ready and self._why[self._ready[0]] is not None:
            index = heapq.heappop(self._ready)
            self._dispatched += 1
            self._host.waiting -= 1
            self._record(index, not_run(self.calls[index], self._why[index] or ""))
            self._mark_done(index)
        return not self._ready

    # -- one call ------------------------------------------------------------------

    async def _run(self, index: int) -> None:  # noqa: C901, PLR0915 (one frame per call)
        # One coroutine per call around the runner: the engine's cost per call
        # is mostly frames, so the call's scope, fault handling and bookkeeping
        # live here rather than in helpers that each add a layer.
        call = self.calls[index]
        result: ToolResult | None = None
        fatal: BaseException | None = None
        tool = self.plans[index].tool
        ceiling = self._ceiling  # config.ceiling_for(tool.timeout), inline:
        if ceiling is not None and tool and tool.timeout and tool.timeout > ceiling:
            ceiling = tool.timeout
        host = self._host
        try:
            if self._why[index] is None:
                self._state[index] = _State.RUNNING
                host.running += 1
                host.waiting -= 1
                try:
                    if self._lazy:
                        # No scope unless the call must be cut: one is made
                        # then (_adopted) and left here, as a `with` would.
                        ceilings = self._ceilings
                        if ceilings is not None and ceiling is not None:
                            ceilings.start(index, ceiling)
                        # guarded(), inline: a coroutine less per call
                        try:
                            result = await self._runner(call)
                        except BaseException as exc:
                            scope = self._scopes[index]
                            result = fault_result(call, exc)
                            if result is not None:
                                if scope is not None:
                                    scope.__exit__(None, None, None)
                            elif scope is None or not scope.__exit__(
                                type(exc), exc, exc.__traceback__
                            ):
                                raise
                        else:
                            if (
                                type(result) is not ToolResult
                                or result.call_id != call.id
                            ):
                                result = coerce_result(call, result)
                            scope = self._scopes[index]
                            if scope is not None:
                                scope.__exit__(None, None, None)
                        if scope is not None and scope.expired:
                            result = at_ceiling(scope, call, result, ceiling)
                    else:
                        result = await self._run_scoped(index, call, ceiling)
                finally:
                    host.running -= 1
        except BaseException as exc:
            if not is_fatal(exc):
                raise
            # Caught here, in the call's own task, so it never reaches the task
            # group (no BaseExceptionGroup on trio, no event-loop abort on asyncio).
            fatal, result = exc, fatal_raised(call, exc)
        finally:
            self._scopes[index] = None
            self._slots.give_with(host.slots)
        if fatal is not None:
            self._on_fatal(fatal)
        if result is not None:
            if result.context_modifier is not None and self.stop != DISCARDED:
                # issue 13 item 4: before any call ordered after this one starts.
                apply_modifiers([result])
            self._record(index, result)
        elif self._state[index] is _State.RUNNING:
            self._record(
                index, stopped_while_running(call, self._why[index] or "cancelled")
            )
        else:
            host.waiting -= 1
            self._record(index, not_run(call, self._why[index] or "cancelled"))
        self._mark_done(index)
        self._outstanding -= 1
        if self._admission_over and not self._outstanding:
            self._check_settled()

    async def _run_scoped(
        self, index: int, call: ToolCall, ceiling: float | None
    ) -> ToolResult | None:
        """The runner under a scope made for the call (trio; asyncio without anyio's table).

        None if the call was cut off (not at its ceiling).
        """
        if ceiling is None and not self._selective:
            return await guarded(self._runner, call)
        result: ToolResult | None = None
        # One scope for the selective cancel and the ceiling (at_ceiling).
        with DeadlineScope(ceiling, task=self._tasks[index]) as scope:
            if self._selective:
                self._scopes[index] = scope
            result = await guarded(self._runner, call)
        return at_ceiling(scope, call, result, ceiling) if scope.expired else result

    def _mark_done(self, index: int) -> None:
        self._finished[index] = True
        dependents = self._dependents[index]
        if dependents is not None:
            self._dependents[index] = None
            for dependent in dependents:
                self._blockers[dependent] -= 1
                self._check_ready(dependent)

    def _record(self, index: int, result: ToolResult) -> None:
        if self.results[index] is None:
            self._answered += 1
        self.results[index] = result
        state = self._state[index]
        started = state is not _State.PENDING
        ran = state is _State.RUNNING or state is _State.RAN
        self._state[index] = _State.RAN if ran else _State.DONE
        if self._on_completed is not None and (self.stop != DISCARDED or started):
            fire_completed(self._on_completed, self.calls[index], result)
        if result.is_error and not result.synthetic:
            tool = self.plans[index].tool
            if tool and tool.abort_siblings_on_error:
                self._abort_siblings(index)

    @property
    def all_answered(self) -> bool:
        """True once every call submitted so far has its result."""
        return self._answered == len(self.calls)

    def _check_settled(self) -> None:
        if self._admission_over and self._outstanding == 0:
            self._is_settled = True
            if self._settled is not None:
                self._settled.set()

    async def wait_settled(self) -> None:
        """Wait until admission is over and every admitted call finished."""
        if self._is_settled:
            return
        if self._settled is None:
            self._settled = anyio.Event()
        await self._settled.wait()

    # -- stopping ------------------------------------------------------------------

    def _abort_siblings(self, failed: int) -> None:
        # seed 003 §4.5.3, as a declaration: only siblings that opt in are cancelled.
        why = f"sibling {self.calls[failed].name} failed"
        self._sibling_failure = why
        for index, plan in enumerate(self.plans):
            state = self._state[index]
            if state is _State.DONE or state is _State.RAN or plan.tool is None:
                continue
            if plan.tool.abort_siblings_on_error:
                self._cancel(index, why)

    def _on_fatal(self, exc: BaseException) -> None:
        # Stop like a user interrupt: what may be cancelled is, the rest is answered.
        if self.fatal is None:
            self.fatal = exc
            self.halt(
                fatal_reason(exc),
                cancel_running=lambda p: p.interrupt is Interrupt.CANCEL,
            )

    def _cancel(self, index: int, why: str) -> None:
        if self._why[index] is None:
            self._why[index] = why
        scope = self._scopes[index]
        if scope is None and self._lazy and self._in_call(index):
            scope = self._adopted(index)
        if scope is not None:
            scope.cancel()

    def _in_call(self, index: int) -> bool:
        """True while the call at `index` runs its runner (its task is in `_run`'s await)."""
        return self._state[index] is _State.RUNNING

    def _cut_at_ceiling(self, index: int) -> None:
        self._adopted(index).expire()

    def _adopted(self, index: int) -> DeadlineScope:
        """The running call's scope, made now if it has none (lazy batches)."""
        scope = self._scopes[index]
        if scope is None:
            task = self._tasks[index]
            assert task is not None  # lazy batches run on asyncio
            scope = self._scopes[index] = DeadlineScope.adopt(task)
        return scope

    def halt(self, why: str, *, cancel_running: Callable[[CallPlan], bool]) -> None:
        """Stop admitting; cancel waiting calls and the running ones `cancel_running` picks."""
        if self.stop is None:
            self.stop = why
        self._stop_admission()
        for index, state in enumerate(self._state):
            if state is _State.ADMITTED or (
                state is _State.RUNNING and cancel_running(self.plans[index])
            ):
                self._cancel(index, why)

    def _stop_admission(self) -> None:
        """Wake the admitting task (it sees `stop`); cut its wait for slots if any."""
        self._poke()
        if self._admission is not None:
            self._admission.cancel()

    def interrupt(self) -> None:
        """User interrupt: CANCEL calls stop, BLOCK calls run on, the rest never start."""
        self.halt(INTERRUPTED, cancel_running=lambda p: p.interrupt is Interrupt.CANCEL)

    def discard(self) -> None:
        """Throw the attempt away: like an interrupt, but nothing will be harvested."""
        self.halt(DISCARDED, cancel_running=lambda p: p.interrupt is Interrupt.CANCEL)

    def close(self) -> None:
        """The dispatcher is closing: admit nothing more; what is admitted runs on."""
        if self.stop is None:
            self.stop = CLOSED
        self._stop_admission()

    def force_close(self) -> None:
        """The drain timed out: cancel everything still running."""
        self.forced = True
        self.halt(CLOSED, cancel_running=lambda p: True)
        for scope in (self.scope, self.fallback_scope):
            if scope is not None:
                scope.cancel()

    def settle_cancelled(self) -> None:
        """Give admitted calls whose tasks a forced close cancelled their synthetic result."""
        for index, result in enumerate(self.results):
            if result is not None:
                continue
            call = self.calls[index]
            if self._state[index] is _State.RUNNING:
                self._record(index, stopped_while_running(call, CLOSED))
                self._mark_done(index)
            elif self._state[index] is _State.ADMITTED:
                self.complete_externally(index, not_run(call, CLOSED))

    # -- results -------------------------------------------------------------------

    def pending_indices(self) -> list[int]:
        """Calls never admitted (after admission ended early)."""
        return [i for i, r in enumerate(self.results) if r is None]

    def settle_unadmitted(self, why: str) -> None:
        """Give every never-admitted call a synthetic 'not run' result.

        Only after admission ended and every admitted call settled.
        """
        for index in self.pending_indices():
            self.complete_externally(
                index, not_run(self.calls[index], self._why[index] or why)
            )

    def complete_externally(
        self, index: int, result: ToolResult, *, ran: bool = False
    ) -> None:
        """Record a result produced outside the engine (after admission ended).

        `ran`: the call was run there (on the dispatch's caller after a close).
        """
        self._host.waiting -= 1
        if ran:
            self._state[index] = _State.RUNNING
        self._record(index, result)
        self._mark_done(index)

    def ran(self, index: int) -> bool:
        """True once the call at `index` entered its runner (it ran, or runs, or was cut)."""
        state = self._state[index]
        return state is _State.RAN or state is _State.RUNNING

    @property
    def touched(self) -> bool:
        """True once a call was admitted or answered: its events were emitted."""
        return self._dispatched > 0 or self._answered > 0

    def harvest(self) -> list[ToolResult]:
        """The results in call order; re-raises a tool's KeyboardInterrupt/SystemExit.

        The fatal exception leaves with the results attached (`results_of`), so
        the caller can record every answered call before it goes on.
        """
        results = self.collected()
        if self.fatal is not None:
            raise attach_results(self.fatal, results)
        return results

    def collected(self) -> list[ToolResult]:
        """The results in call order; every call must have one."""
        if self.all_answered:
            return list(self.results)  # type: ignore[arg-type]  # no None left
        out: list[ToolResult] = []
        for call, result in zip(self.calls, self.results, strict=True):
            out.append(
                result if result is not None else not_run(call, "internal error")
            )
        return out
