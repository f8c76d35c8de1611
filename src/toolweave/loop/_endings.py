"""How a run ends: final answers, stop hooks (as in Claude Code), and the result."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, final

from ..events import CompletionReason, Event
from ..events import Warning as WarningEvent
from ..execution import StopInput
from ..messages import Message, ModelResponse, Text
from ._config import AgentConfig
from ._control import RunControl
from ._conversation import Conversation
from ._cost import CostTracker, enclosing_costs
from ._discarded import DiscardedCalls
from ._result import RunResult, finished_event
from ._steps import BeginIteration, Finish, Step, TransitionReason
from ._tracing import Span, Tracer

if TYPE_CHECKING:
    from ..sessions import Suspension

__all__ = ["EndingLoop", "Endings"]


class EndingLoop(Protocol):
    """What `Endings` reads of its run (the `RunLoop`), and `result`, which it sets."""

    result: RunResult | None
    """Set once the run ended (just before RunFinished is emitted)."""

    suspension: Suspension | None
    """What waits for a person's decision, once the run suspended."""

    @property
    def cfg(self) -> AgentConfig:
        """The run's config (its stop hooks)."""
        ...

    @property
    def control(self) -> RunControl:
        """The run's queue of user messages."""
        ...

    @property
    def conversation(self) -> Conversation:
        """The run's transcript."""
        ...

    @property
    def costs(self) -> CostTracker:
        """The run's costs."""
        ...

    @property
    def discarded(self) -> DiscardedCalls:
        """Notes of calls whose response was void."""
        ...

    @property
    def iteration(self) -> int:
        """The current iteration."""
        ...

    @property
    def run_id(self) -> str:
        """The run's id."""
        ...

    @property
    def run_span(self) -> Span:
        """The run's tracing span."""
        ...

    @property
    def tracer(self) -> Tracer:
        """The run's tracer."""
        ...

    @property
    def emit(self) -> Callable[[Event], None]:
        """Hands an event to the run's listeners."""
        ...


_NOTIFY_STOP_HOOKS = frozenset(
    {
        CompletionReason.MAX_ITERATIONS,
        CompletionReason.BUDGET_EXCEEDED,
        CompletionReason.COST_BUDGET_EXCEEDED,
    }
)


@final
class Endings:
    """Decides what a final answer means and builds the RunResult. Loop task only."""

    def __init__(self, loop: EndingLoop) -> None:
        self._loop = loop
        self._stop_hook_active = False
        self._parent_costs: CostTracker | None = None

    def bind_costs(self) -> None:
        """Make this run's costs the enclosing ones for its tools (call from the run's task).

        A sub-agent's run, started by a tool of this run, adds its costs here.
        """
        self._parent_costs = enclosing_costs.get()
        enclosing_costs.set(self._loop.costs)

    async def after_final_answer(self, response: ModelResponse) -> Step:
        """A response without tool calls: inject queued input, ask stop hooks, or complete.

        A checkpoint only if a stop hook awaits.
        """
        loop = self._loop
        queued = loop.control.take_queue()
        if queued:
            notes = loop.discarded.take_notes()
            loop.conversation.append(Message("user", (*notes, *queued)))
            return BeginIteration(TransitionReason.QUEUED_INPUT)
        hooks = loop.cfg.hooks
        if hooks is not None:
            decision = await hooks.run_stop_hooks(
                StopInput(output=response.text, stop_hook_active=self._stop_hook_active)
            )
            if decision is not None:
                self._stop_hook_active = True
                ask = f"A stop hook asked you to continue:\n{decision.reason}"
                notes = loop.discarded.take_notes()
                loop.conversation.append(
                    Message("user", (Text(ask), *notes) if notes else ask)
                )
                return BeginIteration(
                    TransitionReason.STOP_HOOK_BLOCKED, note=decision.reason
                )
        return Finish(CompletionReason.COMPLETED, output=response.text)

    async def _notify_stop_hooks(self, step: Finish, output: str) -> None:
        """Budget and iteration stops run the stop hooks too; they cannot extend the run."""
        hooks = self._loop.cfg.hooks
        if hooks is None or step.reason not in _NOTIFY_STOP_HOOKS:
            return
        decision = await hooks.run_stop_hooks(
            StopInput(output=output, stop_hook_active=True)
        )
        if decision is not None:
            self._loop.emit(
                WarningEvent(
                    f"a stop hook asked to continue, but the run ended as {step.reason.value}:"
                    f" {decision.reason}"
                )
            )

    async def finish(self, step: Finish) -> RunResult:
        """Run the stop hooks a budget stop owes, then report the result. Never raises."""
        loop = self._loop
        output = (
            step.output
            if step.output is not None
            else loop.conversation.last_assistant_text()
        )
        try:
            await self._notify_stop_hooks(step, output)
        except Exception as exc:
            loop.emit(WarningEvent(f"stop hooks failed: {exc!r}"))
        costs = loop.costs
        result = RunResult(
            output,
            step.reason,
            messages=loop.conversation.snapshot(),
            usage=costs.usage,
            model_usage=costs.by_model,
            cost=costs.cost,
            iterations=loop.iteration,
            detail=step.detail,
            run_id=loop.run_id,
            suspension=loop.suspension,
        )
        if self._parent_costs is not None:
            self._parent_costs.merge(costs)
        self._end_span(result)
        loop.result = result
        loop.emit(finished_event(result))
        return result

    def _end_span(self, result: RunResult) -> None:
        span = self._loop.run_span
        span.set("toolweave.completion_reason", result.completion_reason.value)
        span.set("toolweave.iterations", result.iterations)
        span.set("gen_ai.usage.input_tokens", result.usage.input_tokens)
        span.set("gen_ai.usage.output_tokens", result.usage.output_tokens)
        span.set("toolweave.cost_usd", result.cost)
        if self._loop.tracer.captures_payloads:
            span.set("gen_ai.output.messages", result.output)
        if result.completion_reason is CompletionReason.ERROR:
            span.fail("run_error", result.detail[:200])
        span.end()
