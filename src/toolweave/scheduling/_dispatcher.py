"""Dispatcher: runs batches of tool calls under the gate, a policy and two caps."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import final

import anyio

from .._native.cancel import sole_fatal
from .._native.deadline import DeadlineScope
from .._native.spawn import open_spawner
from .._native.threads import abandoning_threads, worker_threads
from ..messages import ToolCall, ToolResult
from ..tools import ToolRegistry
from ._batch import Batch
from ._calls import (
    INTERRUPTED,
    CompletedListener,
    Runner,
    StartedListener,
    fire_completed,
    prepare,
)
from ._config import ConcurrencyConfig
from ._gate import warm
from ._host import Host
from ._interrupt import InterruptToken
from ._leftovers import finish_batch, harvest
from ._request import Request
from ._results import not_run
from ._sequential import run_sequential
from ._stream import ToolStream

__all__ = ["Dispatcher", "DispatcherStatistics", "InterruptLike"]

logger = logging.getLogger("toolweave.scheduling")

InterruptLike = InterruptToken | anyio.Event


@dataclass(frozen=True, slots=True)
class DispatcherStatistics:
    """A snapshot of a Dispatcher's load."""

    running: int
    """Calls inside their runner right now, across every batch."""
    waiting: int
    """Calls submitted but not yet running (waiting for slots, dependencies or readiness)."""
    batches: int
    """Batches (dispatches and streams) in progress."""
    slots_in_use: int
    """Host slots held (>= running: an admitted call holds its slot while it waits)."""
    max_concurrency: int
    """The host cap."""
    closed: bool
    """True once `aclose` began."""
    abandoned_threads: int = 0
    """Worker threads abandoned at a call's deadline that are still running."""
    abandoned_threads_total: int = 0
    """Worker threads abandoned since the Dispatcher was created."""


@final
class Dispatcher:
    """Runs the tool calls of one model response: safe ones together, the rest in order.

    One Dispatcher is the *host*: `max_concurrency` bounds the calls running at
    once across every dispatch on it (many sessions may share it), while
    `per_batch_max` bounds one dispatch so it cannot starve the others.

    Guarantees of `dispatch`: results in call order, one per call;
    `on_started(call)` from the dispatching task in call order, after the call's
    slots are taken and before it runs (backpressure delays it, never reorders
    it); `on_completed(call, result)` in completion order; a runner that raises or
    returns nothing gives an error result; a listener that raises is logged and
    swallowed; `dispatch` never raises for a tool's fault.

    Loop affinity: a Dispatcher belongs to the event loop it is first used in.
    """

    def __init__(self, config: ConcurrencyConfig | None = None) -> None:
        self.config = config or ConcurrencyConfig()
        """The configuration (fixed for the Dispatcher's life)."""
        self._host: Host | None = None
        self._batches: set[Batch] = set()
        self._idle: anyio.Event | None = None
        self._closed = False

    async def __aenter__(self) -> Dispatcher:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        """True once `aclose` began; later dispatches run sequentially on the caller."""
        return self._closed

    def _get_host(self) -> Host:
        if self._host is None:
            self._host = Host(self.config.max_concurrency)
        return self._host

    def statistics(self) -> DispatcherStatistics:
        """Current running/waiting counts. Safe to call at any time from the loop thread."""
        host = self._host
        return DispatcherStatistics(
            running=host.running if host else 0,
            waiting=host.waiting if host else 0,
            batches=len(self._batches),
            slots_in_use=host.slots.used if host else 0,
            max_concurrency=self.config.max_concurrency,
            closed=self._closed,
            abandoned_threads=host.threads.abandoned_now if host else 0,
            abandoned_threads_total=host.threads.abandoned_total if host else 0,
        )

    def _new_batch(
        self,
        request: Request,
        *,
        eager: bool,
        selective: bool,
        audit_enforced: bool = False,
    ) -> Batch:
        return Batch(
            self._get_host(),
            request,
            self.config,
            eager=eager,
            selective=selective,
            audit_enforced=audit_enforced,
        )

    async def dispatch(
        self,
        calls: Sequence[ToolCall],
        registry: ToolRegistry,
        runner: Runner,
        on_started: StartedListener | None = None,
        on_completed: CompletedListener | None = None,
        *,
        interrupt: InterruptLike | None = None,
    ) -> list[ToolResult]:
        """Run `calls` and return one result per call, in call order.

        Checkpoint: always (it awaits the calls). Cancelling the dispatching task
        cancels every call of the batch and re-raises; nothing is left running.

        Args:
            calls: The tool calls of one model response, in the model's order.
            registry: The session's tools (the gate looks calls up here).
            runner: ``async (call) -> ToolResult``, normally the execution lifecycle.
            on_started: Called with each call in call order, before it runs.
            on_completed: Called with each call and its result as it finishes.
            interrupt: An InterruptToken (or anyio.Event): when set, CANCEL calls
                are cancelled, BLOCK calls run to the end, and calls not yet
                started get a synthetic "not run: interrupted" result.
        """
        calls = list(calls)
        if not calls:
            return []
        if interrupt is None or isinstance(interrupt, InterruptToken):
            # the usual case: no watcher task, so no context manager either
            request = Request(registry, runner, on_started, on_completed, interrupt)
            return await self._dispatch(request, calls)
        async with _as_token(interrupt) as token:
            request = Request(registry, runner, on_started, on_completed, token)
            return await self._dispatch(request, calls)

    async def _dispatch(
        self, request: Request, calls: list[ToolCall]
    ) -> list[ToolResult]:
        """`dispatch` once its request is made (a deferred stream's harvest too)."""
        if not calls:
            return []
        registry = request.registry
        if registry.needs_warming:
            for call in calls:
                tool = registry.get(call.name)
                if tool is not None and tool.needs_warming:  # else nothing to await
                    await warm(call, registry)
        if not self.config.enabled or self._closed:
            return await run_sequential(calls, request, config=self.config)
        if len(calls) == 1:
            return await self._run_single(calls[0], request)
        batch = self._new_batch(
            request, eager=False, selective=request.interrupt is not None
        )
        return await self._run_batch(batch, calls)

    async def _run_single(self, call: ToolCall, request: Request) -> list[ToolResult]:
        """A one-call batch: the plain path, but under a host slot like any call.

        88 % of real responses carry one call; without a slot, sessions sharing
        the Dispatcher would run past `max_concurrency` (issue 13, item 5). The
        readiness step runs before the slot; an interrupt stops the slot wait.
        """
        host = self._get_host()
        tool = request.registry.get(call.name)
        if tool is not None and tool.needs_prepare:
            await prepare(tool)
        host.waiting += 1
        try:
            got = await host.acquire_host(request.interrupt)
        finally:
            host.waiting -= 1
        if not got:
            result = not_run(call, INTERRUPTED)
            fire_completed(request.on_completed, call, result)
            return [result]
        host.running += 1
        reset = worker_threads.set(host.threads)
        try:
            return await run_sequential(
                [call], request, config=self.config, prepared=True
            )
        finally:
            worker_threads.reset(reset)
            host.running -= 1
            host.slots.give()

    async def _run_batch(self, batch: Batch, calls: list[ToolCall]) -> list[ToolResult]:
        self._batches.add(batch)
        token = batch.request.interrupt
        unsubscribe = token.subscribe(batch.interrupt) if token else None
        reset = worker_threads.set(self._get_host().threads)
        try:
            # a native scope on asyncio: one anyio scope per batch was a
            # measurable share of a small batch
            with self._zone(), DeadlineScope() as batch.scope:
                async with open_spawner() as tg:
                    batch.attach(tg)
                    batch.submit_all(calls)
                    batch.finish()
                    await batch.admit_all()
            batch.scope = None
            await finish_batch(batch)
        finally:
            worker_threads.reset(reset)
            if unsubscribe:
                unsubscribe()
            self._forget(batch)
        return harvest(batch)

    def _forget(self, batch: Batch) -> None:
        batch.release()
        self._batches.discard(batch)
        if not self._batches and self._idle is not None:
            self._idle.set()

    @asynccontextmanager
    async def open_stream(
        self,
        registry: ToolRegistry,
        runner: Runner,
        on_started: StartedListener | None = None,
        on_completed: CompletedListener | None = None,
        *,
        interrupt: InterruptLike | None = None,
        audit_enforced: bool = False,
    ) -> AsyncIterator[ToolStream]:
        """Open the streaming seam: feed calls as their blocks complete.

        While the response still streams (if `streaming_overlap` is on and the
        policy can plan incrementally), a call starts only if `starts_early`
        says so: SAFE, claiming no write, and vouched for by its tool's
        `Warrant` (`audit_enforced`: your runner enforces the declaration
        audit, so `Warrant.AUDITED` counts). The first call that may not holds
        itself and every later call until `finish()`; once the response is
        final every call is scheduled by its plan, as `dispatch` would. Leaving
        the block without `harvest()` discards the attempt (`ToolStream.discard`).
        """
        async with _as_token(interrupt) as token:
            request = Request(registry, runner, on_started, on_completed, token)
            if not self.config.enabled or self._closed:
                yield ToolStream.deferred(partial(self._dispatch, request))
                return
            async with self._live_stream(request, audit_enforced) as stream:
                yield stream

    @asynccontextmanager
    async def _live_stream(
        self, request: Request, audit_enforced: bool
    ) -> AsyncIterator[ToolStream]:
        """A stream whose calls start as they arrive (and as `starts_early` allows)."""
        batch = self._new_batch(
            request,
            eager=self.config.streaming_overlap,
            selective=True,
            audit_enforced=audit_enforced,
        )
        self._batches.add(batch)
        token = request.interrupt
        unsubscribe = token.subscribe(batch.interrupt) if token else None
        reset = worker_threads.set(self._get_host().threads)
        stream = ToolStream.live(batch)
        try:
            with self._zone():
                async with _unwrapping(batch), open_spawner() as tg:
                    batch.attach(tg)
                    tg.start_soon(batch.admit_all)
                    try:
                        yield stream
                    finally:
                        if not stream.harvested:
                            stream.discard()
        finally:
            worker_threads.reset(reset)
            if unsubscribe:
                unsubscribe()
            self._forget(batch)
        if batch.fatal is not None and not stream.harvested:
            raise batch.fatal  # a discarded attempt's tool raised it

    def _zone(self) -> AbstractContextManager[object]:
        """Where a batch's calls run: with a ceiling, a cancelled worker thread is abandoned.

        One zone for the whole batch (its call tasks inherit it) rather than one
        per call: setting a context variable per call costs every later lookup.
        """
        if self.config.default_tool_timeout is None:
            return nullcontext()
        return abandoning_threads()

    async def aclose(self, drain_timeout: float | None = None) -> None:
        """Stop taking new work, drain running calls, then cancel what is left.

        Batches in progress admit nothing more; their admitted calls may finish
        within `drain_timeout` (default: the config's, 30 s), after which they
        are cancelled with synthetic results. Calls those batches never admitted
        run sequentially on their callers (or get "not run" after a forced
        close). Later dispatches run sequentially. Idempotent.
        """
        self._closed = True
        if not self._batches:
            return
        self._idle = anyio.Event()
        for batch in list(self._batches):
            batch.close()
        timeout = self.config.drain_timeout if drain_timeout is None else drain_timeout
        with anyio.move_on_after(timeout):
            await self._idle.wait()
        if self._batches:
            logger.warning(
                "drain timed out after %s s; cancelling running calls", timeout
            )
            for batch in list(self._batches):
                batch.force_close()
            await self._idle.wait()


@asynccontextmanager
async def _unwrapping(batch: Batch) -> AsyncIterator[None]:
    """Let a tool's KeyboardInterrupt/SystemExit out of the stream's task group as itself.

    `harvest` raises it inside the block; a trio nursery would wrap it in a
    BaseExceptionGroup, which the caller of the loop must never see.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        if batch.fatal is not None and sole_fatal(group) is batch.fatal:
            raise batch.fatal from None
        raise


@asynccontextmanager
async def _as_token(
    interrupt: InterruptLike | None,
) -> AsyncIterator[InterruptToken | None]:
    """Adapt an anyio.Event to an InterruptToken (a watcher task); tokens pass through."""
    if interrupt is None or isinstance(interrupt, InterruptToken):
        yield interrupt
        return
    token = InterruptToken()
    if interrupt.is_set():
        token.set()
        yield token
        return
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await interrupt.wait()
            token.set()

        tg.start_soon(watch)
        try:
            yield token
        finally:
            tg.cancel_scope.cancel()
