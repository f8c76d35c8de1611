"""One call of a batch: its record, its runner under the scope that can cut it, and how.

A call is cut by one `DeadlineScope` at most, whose deadline is its ceiling and
whose `cancel()` is its owner's (a selective cancel, a user interrupt). On
asyncio with the native scopes (`native_alarm()`) a call gets no scope at all
unless it must be cut: `run_adopting` runs the runner bare and, if the batch
adopted a scope for the call meanwhile (`CallRecord.adopted`), ends that scope's
region as a ``with`` block would; its ceiling is kept by the batch's `Ceilings`.
Elsewhere `run_scoped` enters a scope made for the call.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from typing import final

from .._native.deadline import DeadlineScope, native_alarm
from ..messages import ToolCall, ToolResult
from ._calls import Runner, at_ceiling, fault_result, guarded
from ._ceilings import Ceilings
from ._config import ConcurrencyConfig
from ._gate import CallPlan
from ._results import coerce_result

__all__ = ["CallRecord", "CallScopes", "CallState", "run_adopting", "run_scoped"]


class CallState(enum.Enum):
    """Where a call of a batch stands."""

    PENDING = "pending"
    """Submitted; not admitted (it waits, or it never will be)."""
    ADMITTED = "admitted"
    """Its slots are taken and its task started; its runner not entered yet."""
    RUNNING = "running"
    """Inside its runner."""
    RAN = "ran"
    """Answered after its runner was entered (it ran, or was cut)."""
    DONE = "done"
    """Answered without running."""


@final
class CallRecord:
    """Everything the batch keeps about one of its calls.

    `why` is set once the call must not run on (a sibling failed, an interrupt,
    a close): a call not yet running never starts, and its synthetic result
    says why. Loop affinity: the batch's event loop.
    """

    __slots__ = ("call", "index", "plan", "result", "scope", "state", "task", "why")

    def __init__(self, index: int, call: ToolCall, plan: CallPlan) -> None:
        self.index = index
        self.call = call
        self.plan = plan
        self.result: ToolResult | None = None
        self.state = CallState.PENDING
        self.scope: DeadlineScope | None = None
        """The scope that can cut the call while it runs (None: none made)."""
        self.task: asyncio.Task[object] | None = None
        """The call's asyncio task once started (None on other backends)."""
        self.why: str | None = None

    @property
    def ran(self) -> bool:
        """True once the call entered its runner (it ran, or runs, or was cut)."""
        state = self.state
        return state is CallState.RAN or state is CallState.RUNNING

    def cut(self, why: str, *, adopting: bool) -> None:
        """Stop the call for `why`: it never starts, or its runner is cancelled.

        `adopting`: the batch makes scopes only to cut (`run_adopting`); a
        running call without one gets one now.
        """
        if self.why is None:
            self.why = why
        scope = self.scope
        if scope is None and adopting and self.state is CallState.RUNNING:
            scope = self.adopted()
        if scope is not None:
            scope.cancel()

    def adopted(self) -> DeadlineScope:
        """The running call's scope, made now if it has none (`run_adopting` batches)."""
        scope = self.scope
        if scope is None:
            task = self.task
            assert task is not None  # adopting batches run on asyncio
            scope = self.scope = DeadlineScope.adopt(task)
        return scope


async def run_adopting(
    record: CallRecord,
    runner: Runner,
    ceilings: Ceilings | None,
    ceiling: float | None,
) -> ToolResult | None:
    """The runner with no scope of its own: one adopted meanwhile is ended here.

    As `run_scoped`: a fault is an error result, the ceiling's timeout result
    if the deadline came first, None if the owner cut the call.
    """
    call = record.call
    if ceilings is not None and ceiling is not None:
        ceilings.start(record.index, ceiling)
    answer: ToolResult | None
    try:
        result = await runner(call)
    except BaseException as exc:
        answer = fault_result(call, exc)
        scope = record.scope
        if answer is not None:
            if scope is not None:
                scope.__exit__(None, None, None)
        elif scope is None or not scope.__exit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        answer = result
        if type(result) is not ToolResult or result.call_id != call.id:
            answer = coerce_result(call, result)
        scope = record.scope
        if scope is not None:
            scope.__exit__(None, None, None)
    if scope is not None and scope.expired:
        return at_ceiling(scope, call, answer, ceiling)
    return answer


async def run_scoped(
    record: CallRecord, runner: Runner, ceiling: float | None, selective: bool
) -> ToolResult | None:
    """The runner under a scope made for the call (trio; asyncio without anyio's table).

    `selective`: the call may be cut on its own (the scope is kept on the
    record). None if the call was cut off (not at its ceiling).
    """
    if ceiling is None and not selective:
        return await guarded(runner, record.call)
    result: ToolResult | None = None
    with DeadlineScope(ceiling, task=record.task) as scope:
        if selective:
            record.scope = scope
        result = await guarded(runner, record.call)
    if scope.expired:
        return at_ceiling(scope, record.call, result, ceiling)
    return result


@final
class CallScopes:
    """How the calls of one batch are cut, chosen once for the backend it runs on.

    Adopting (asyncio with the native scopes, `native_alarm()`): no scope per
    call; one is adopted only to cut a call, and the ceilings wait behind one
    alarm entry (`Ceilings`). Otherwise each call that may be cut (a ceiling,
    or `selective`: calls may be cancelled one by one) enters its own scope.
    Loop affinity: the batch's event loop.
    """

    __slots__ = ("_ceilings", "_config", "_records", "adopting", "selective")

    def __init__(
        self, records: list[CallRecord], config: ConcurrencyConfig, selective: bool
    ) -> None:
        self._records = records
        self._config = config
        self._ceilings: Ceilings | None = None
        self.adopting = False
        self.selective = selective
        """True once calls may be cut one by one (an interrupt, a sibling abort)."""

    def bind(self) -> None:
        """Choose for the running backend (called on the loop the batch runs on)."""
        alarm = native_alarm()
        self.adopting = alarm is not None
        if alarm is not None and self._config.default_tool_timeout is not None:
            self._ceilings = Ceilings(alarm, self._cut_at_ceiling, self._in_call)

    def close(self) -> None:
        """The batch is over: drop the ceilings' alarm entry (and its cycle)."""
        if self._ceilings is not None:
            self._ceilings.close()
            self._ceilings = None

    def run(self, record: CallRecord, runner: Runner) -> Awaitable[ToolResult | None]:
        """The runner of `record` under what can cut it; None if its owner cut it."""
        tool = record.plan.tool
        ceiling = self._config.ceiling_for(tool.timeout if tool else None)
        if self.adopting:
            return run_adopting(record, runner, self._ceilings, ceiling)
        return run_scoped(record, runner, ceiling, self.selective)

    def cut_where(self, why: str, cancel_running: Callable[[CallPlan], bool]) -> None:
        """Cut, for `why`, every admitted call and the running ones `cancel_running` picks."""
        for record in self._records:
            state = record.state
            if state is CallState.ADMITTED or (
                state is CallState.RUNNING and cancel_running(record.plan)
            ):
                record.cut(why, adopting=self.adopting)

    def cut_siblings(self, why: str) -> None:
        """Cut, for `why`, every unanswered call whose tool aborts with its siblings.

        Seed 003 §4.5.3, as a declaration: only siblings that opt in are cut.
        """
        for record in self._records:
            tool = record.plan.tool
            if record.result is None and tool and tool.abort_siblings_on_error:
                record.cut(why, adopting=self.adopting)

    def _in_call(self, index: int) -> bool:
        """True while the call at `index` runs its runner (`Ceilings` cuts only those)."""
        return self._records[index].state is CallState.RUNNING

    def _cut_at_ceiling(self, index: int) -> None:
        self._records[index].adopted().expire()
