"""One iteration's tool calls: the Dispatcher, the lifecycle, events, spans and the watcher."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, final

from ..events import Event, ToolResultReady, ToolUseStarted
from ..messages import Text, ToolCall, ToolResult
from ..scheduling import (
    StartedWithAccess,
    attach_results,
    classify,
    results_of,
    starts_early,
    warm,
)
from ._eager import EagerBatch, Spawn
from ._guards import RepeatFailureWatcher
from ._tracing import NULL_SPAN, Span, Tracer

if TYPE_CHECKING:
    from ..execution import ToolRunner
    from ..scheduling import Dispatcher, InterruptToken, SettledCall, ToolStream
    from ..tools import Access, Tool, ToolRegistry
    from ._config import AgentConfig
    from ._soon import Schedule

__all__ = [
    "ToolBatcher",
    "discarded_calls_note",
    "refused_call_result",
    "truncated_call_result",
    "unanswered_call_result",
]

_ARGUMENTS_SHOWN = 300
"""Characters of a call's arguments quoted in `discarded_calls_note`."""


@final
class _BatchCalls:
    """The runner a `ToolBatcher` hands its Dispatcher: by name, or as classified.

    The Dispatcher gives a classified call's tool to `run_resolved` (see
    `Request.resolved` in the scheduler), so the lifecycle runs the tool the
    gate classified, never a second lookup's.
    """

    __slots__ = ("_batcher",)

    def __init__(self, batcher: ToolBatcher) -> None:
        self._batcher = batcher

    async def __call__(self, call: ToolCall) -> ToolResult:
        return await self._batcher.run_call(call)

    async def run_resolved(self, call: ToolCall, tool: Tool | None) -> ToolResult:
        return await self._batcher.run_resolved(call, tool)


def truncated_call_result(call: ToolCall) -> ToolResult:
    """The error that answers a call of a response cut at max_tokens that never started.

    A call that had started while the response streamed keeps the result it
    got (`ToolBatcher.answer_void`): it ran, whatever became of the response.
    """
    return ToolResult(
        call.id,
        f"Not run: the response was truncated at max_tokens, so the call to"
        f" {call.name!r} may be incomplete and was not executed. Produce less output"
        " in one response (for example, split a large write into smaller pieces) and"
        " call the tool again.",
        is_error=True,
        synthetic=True,
    )


def refused_call_result(call: ToolCall) -> ToolResult:
    """The error that answers a call of a response the provider stopped as a refusal.

    A refusal (Anthropic ``refusal``, a ``content_filter`` finish) means the
    provider's safety system cut or filtered the response: a call in it is
    not one the provider let through whole, so it is not run (fail closed),
    as a truncated response's calls are not. One that had already started
    while the response streamed keeps its result instead (`answer_void`).
    """
    return ToolResult(
        call.id,
        f"Not run: the provider stopped this response as a refusal (safety or"
        f" content filter), so the call to {call.name!r} was not executed.",
        is_error=True,
        synthetic=True,
    )


def discarded_calls_note(ran: Sequence[SettledCall]) -> Text | None:
    """What the model is told of calls that ran from an attempt a retry threw away.

    The attempt is not in the transcript (the gateway asked again), so its
    calls cannot be answered there; but they ran, so the next user message
    says so, with what each returned (a read's content included: the read
    ledger counts it as shown). None if nothing ran.
    """
    if not ran:
        return None
    lines = [
        "<system-reminder>",
        "An earlier attempt at your last response broke off while it streamed and"
        " was discarded: the same request was sent again, and your last response"
        " is the answer to it. Tool calls of the discarded attempt had already"
        " started; they ran, and what they did is real:",
    ]
    for settled in ran:
        call, result = settled.call, settled.result
        arguments = call.raw_arguments or json.dumps(dict(call.input), default=str)
        if len(arguments) > _ARGUMENTS_SHOWN:
            arguments = arguments[:_ARGUMENTS_SHOWN] + "…"
        outcome = "failed" if result.is_error else "returned"
        lines.append(f"- {call.name} {arguments} {outcome}:\n{result.text}")
    lines.append(
        "Take them into account; do not repeat one that changed something unless"
        " you mean to.\n</system-reminder>"
    )
    return Text("\n".join(lines))


def unanswered_call_result(call: ToolCall, why: str) -> ToolResult:
    """The error that answers a call whose batch never reported (the run failed or was cancelled).

    Whether the call ran is unknown, so the result says so instead of guessing.
    """
    return ToolResult(
        call.id,
        f"Interrupted, outcome unknown: {why} before the result of {call.name!r} was"
        " recorded, so whether it took effect is unknown. Check its effects before"
        " repeating it.",
        is_error=True,
        synthetic=True,
    )


@final
class ToolBatcher:
    """Runs the calls of one response and reports them.

    The Dispatcher owns ordering, caps and interrupts; this adds what the loop
    needs around each call: the repeat-failure watcher (a refused call never
    reaches the lifecycle), a tool span, and the ToolUseStarted /
    ToolResultReady events. Used from the loop's event loop only.
    """

    def __init__(
        self,
        *,
        dispatcher: Dispatcher,
        registry: ToolRegistry,
        runner: ToolRunner,
        halt: InterruptToken,
        emit: Callable[[Event], None],
        tracer: Tracer,
        clock: Callable[[], float],
        config: AgentConfig,
    ) -> None:
        """`config` sets the policy: the repeat-failure limit and streaming overlap."""
        self._dispatcher = dispatcher
        self._suspend = runner.suspend_point
        self._registry = registry
        self._runner = runner
        self._calls = _BatchCalls(self)
        self._audit_enforced = runner.audit == "enforce"
        self._halt = halt
        self._emit = emit
        self._tracer = tracer
        limit = config.repeat_failure_limit
        self._watcher = RepeatFailureWatcher(limit) if limit else None
        self._clock = clock
        self.overlap = (
            config.concurrency.enabled and config.concurrency.streaming_overlap
        )
        """Whether calls start while the response still streams."""
        self.iteration = 0
        """The iteration events are tagged with."""
        self.parent_span: Span = NULL_SPAN
        """The iteration span tool spans nest under."""
        self._started = StartedWithAccess(self._on_started)
        self.ran: tuple[ToolCall, ...] = ()
        """The calls of the last `run`, as run (in call order, with their keys)."""

    # -- listeners and the per-call runner -------------------------------------

    def _on_started(self, call: ToolCall, access: Access | None = None) -> None:
        if self._suspend is not None:
            self._suspend.started()
        if access is None:
            event = ToolUseStarted(call, iteration=self.iteration, at=self._clock())
        else:  # what the gate scheduled it by: a recorder needs no registry
            event = ToolUseStarted(
                call,
                iteration=self.iteration,
                reads=access.reads,
                writes=access.writes,
                at=self._clock(),
            )
        self._emit(event)

    def _on_completed(self, call: ToolCall, result: ToolResult) -> None:
        suspend = self._suspend
        if suspend is not None:
            suspend.completed(call)
            if suspend.waits(call):
                return  # no result of its own yet: the resume gives it one
        self._emit(
            ToolResultReady(call, result, iteration=self.iteration, at=self._clock())
        )

    async def run_call(self, call: ToolCall) -> ToolResult:
        """Run one call as the tool its name resolves to now (`run_resolved`)."""
        return await self.run_resolved(call, self._registry.get(call.name))

    async def run_resolved(self, call: ToolCall, tool: Tool | None) -> ToolResult:
        """Run one call as `tool`: the watcher's refusal, or the lifecycle in a tool span.

        `tool` is the one the Dispatcher classified the call by (issue 29, item 4).
        """
        watcher = self._watcher
        if watcher is not None:
            refused = watcher.refusal(call)
            if refused is not None:
                return refused
        if self._tracer.enabled:
            result = await self._traced(call, tool)
        else:
            result = await self._runner.run_resolved(call, tool)
        if watcher is not None and not (
            self._suspend is not None and self._suspend.waits(call)
        ):
            watcher.observe(call, result)
        return result

    async def _traced(self, call: ToolCall, tool: Tool | None) -> ToolResult:
        tracer = self._tracer
        span = tracer.start(
            f"execute_tool {call.name}",
            parent=self.parent_span,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )
        if tracer.captures_payloads:
            span.set(
                "gen_ai.tool.call.arguments",
                call.raw_arguments or repr(dict(call.input)),
            )
        try:
            with tracer.activate(span):  # a sub-agent's spans nest under this one
                result = await self._runner.run_resolved(call, tool)
            if result.is_error:
                span.fail("tool_error", result.text[:200])
            if tracer.captures_payloads:
                span.set("gen_ai.tool.call.result", result.text)
        finally:
            span.end()
        return result

    # -- batches ------------------------------------------------------------------

    def eager_batch(self, spawn: Spawn, schedule: Schedule) -> EagerBatch:
        """The early-start side of one model call (only used with streaming overlap on)."""
        registry, audited = self._registry, self._audit_enforced

        def open_stream() -> AbstractAsyncContextManager[ToolStream]:
            return self._dispatcher.open_stream(
                registry,
                self._calls,
                self._started,
                self._on_completed,
                interrupt=self._halt,
                audit_enforced=audited,
            )

        def eligible(call: ToolCall) -> bool:
            return starts_early(classify(call, registry), audit_enforced=audited)

        return EagerBatch(
            open_stream=open_stream,
            eligible=eligible,
            warm=lambda call: warm(call, registry),
            spawn=spawn,
            schedule=schedule,
        )

    async def run(
        self,
        calls: Sequence[ToolCall],
        stream: ToolStream | None,
        done: Mapping[str, ToolResult] | None = None,
    ) -> tuple[ToolResult, ...]:
        """Run `calls` (or harvest `stream`, which already holds them); results in call order.

        A checkpoint. Never raises for a tool's fault; the lifecycle's aggregate
        result budget is applied to the batch before it is returned, unless the
        batch suspended (its results are then as the calls left them: the
        resume finishes the batch). `done`: results of calls of a resumed batch
        that ran before it suspended, by call key: they are not run again.
        """
        whole = calls
        if done:
            calls = [c for c in calls if c.ref not in done]
        calls, results = await self._run(calls, stream)
        if done:
            rest = iter(results)
            results = [done[c.ref] if c.ref in done else next(rest) for c in whole]
            calls = whole
        self.ran = tuple(calls)
        if self._suspend is not None and self._suspend.tripped:
            return tuple(results)
        return tuple(self._runner.finish_batch(results, calls))

    async def _run(
        self, calls: Sequence[ToolCall], stream: ToolStream | None
    ) -> tuple[Sequence[ToolCall], list[ToolResult]]:
        """The batch's calls as run (a stream's keys) and their results, in call order."""
        try:
            if stream is not None:
                stream.finish()
                results = await stream.harvest()
                # the calls as run (same order; the keys they ran under)
                calls = stream.calls
            else:
                results = await self._dispatcher.dispatch(
                    calls,
                    self._registry,
                    self._calls,
                    self._started,
                    self._on_completed,
                    interrupt=self._halt,
                )
        except (KeyboardInterrupt, SystemExit) as exc:
            answered = results_of(exc)  # a tool raised it; the batch is answered
            if answered is not None:
                run = stream.calls if stream is not None else calls
                attach_results(exc, self._runner.finish_batch(answered, run))
            raise
        return calls, results

    def answer_void(
        self,
        calls: Sequence[ToolCall],
        started: Mapping[str, ToolResult],
        answer: Callable[[ToolCall], ToolResult],
    ) -> tuple[ToolResult, ...]:
        """Answer the calls of a response that runs nothing (cut at max_tokens, refused).

        A call that had started while the response streamed (`started`, by
        `ToolCall.key`) keeps the result its events already reported: it ran
        (or was cut, or never got to run, as that result says). Every other
        call gets `answer`'s error without running, with events as if run.
        The aggregate result budget applies, as to any batch.
        """
        results = []
        for call in calls:
            result = started.get(call.key)
            if result is None:
                result = answer(call)
                self._on_started(call)
                self._on_completed(call, result)
            results.append(result)
        return tuple(self._runner.finish_batch(results, calls))
