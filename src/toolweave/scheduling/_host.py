"""Host: what every batch on one Dispatcher shares (the host cap, worker threads, counts)."""

from __future__ import annotations

from typing import final

import anyio

from .._native.threads import WorkerThreads
from ..messages import ToolCall
from ..tools import Access, ToolRegistry
from ._gate import CallPlan, classify
from ._interrupt import InterruptToken
from ._slots import Slots

__all__ = ["Host"]

_TOO_MANY_THREADS = "too many abandoned worker threads: sync tools run exclusive"


@final
class Host:
    """The resources every batch on one Dispatcher shares: the host cap and threads.

    `running` and `waiting` are the counts `Dispatcher.statistics` reports:
    calls inside their runner, and calls submitted but not running yet.
    Loop affinity: the Dispatcher's event loop.
    """

    __slots__ = ("running", "slots", "threads", "waiting")

    def __init__(self, max_concurrency: int) -> None:
        self.slots = Slots(max_concurrency)
        self.threads = WorkerThreads(max_concurrency)
        self.running = 0
        self.waiting = 0

    async def acquire(self, batch: Slots) -> None:
        """Take a batch slot, then a host slot.

        Batch first: a batch at its own cap must not hold a host slot idle while
        it waits. A checkpoint only when a slot is not free at once.
        """
        if not batch.try_take():
            await batch.take()
        try:
            if not self.slots.try_take():
                await self.slots.take()
        except BaseException:
            batch.give()
            raise

    async def acquire_host(self, interrupt: InterruptToken | None) -> bool:
        """Take a host slot; False if `interrupt` was set first. Always a checkpoint."""
        if interrupt is None:
            await self.slots.take()
            return True
        if interrupt.is_set():
            return False
        with anyio.CancelScope() as scope:
            unsubscribe = interrupt.subscribe(scope.cancel)
            try:
                await self.slots.take()
            finally:
                unsubscribe()
        return not scope.cancelled_caught

    def classify(
        self, registry: ToolRegistry, max_abandoned: int, call: ToolCall
    ) -> CallPlan:
        """The gate's plan of `call` (`classify`), capped for this host's threads."""
        plan = classify(call, registry)
        tool = plan.tool
        if tool is not None and tool.runs_in_thread:
            plan = self.cap_threads(plan, max_abandoned)
        return plan

    def cap_threads(self, plan: CallPlan, max_abandoned: int) -> CallPlan:
        """`plan`, made exclusive if it runs a sync tool while too many threads are abandoned.

        Issue 13 item 3: a thread cannot be stopped, so past `max_abandoned`
        abandoned threads sync tools stop piling more up beside each other.
        """
        tool = plan.tool
        if (
            tool is None
            or not tool.runs_in_thread
            or plan.runs_nothing
            or self.threads.abandoned_now < max_abandoned
        ):
            return plan
        return CallPlan(tool, plan.args, False, Access.barrier(), _TOO_MANY_THREADS)
