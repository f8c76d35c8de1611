"""The ReAct loop: one driver, one small function per step, typed transitions between them.

The driver (`RunLoop.drive`) only moves from state to state; every decision
lives in a step function that returns the next state (`_steps`). Every
transcript change is reported as it happens (`MessageAppended`,
`TranscriptReplaced`, see `Conversation`): an assistant message is appended as
soon as its response is final, before its tools run, so a process killed
mid-batch has it on record. A step that raises ends the run as ERROR with a
valid transcript: calls left unanswered get an "outcome unknown" error result
(`close_open_calls`). Calls started while a response streamed are recorded for
what they did even when the response comes to nothing (`_discarded`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any, assert_never, final

import anyio

from .._exceptions import ModelError, PromptTooLongError
from .._native.clock import fast_clock
from ..events import (
    CompletionReason,
    Event,
    IterationStarted,
    LoopTransition,
    ReadStateChanged,
    RunStarted,
    RunSuspended,
)
from ..events import Warning as WarningEvent
from ..execution import PermissionMode, RunStartInput, StartBarrier, SuspendPoint
from ..messages import Message, StopReason, Text, ToolResult, Usage
from ..models import ModelRequest
from ..scheduling import results_of
from ..tools import reporting_declaration_errors
from ._budget import BudgetDecision
from ._context_feed import ContextFeed
from ._control import RunControl
from ._conversation import Conversation
from ._cost import CostTracker
from ._discarded import DiscardedCalls
from ._eager import EagerBatch, Spawn
from ._endings import Endings
from ._guards import StalledIterationGuard
from ._micro import MicroCompactor
from ._model_call import Halted, ModelCaller
from ._run_start import with_run_start_context
from ._setup import RunSetup
from ._shrink import Shrinker
from ._soon import Schedule, soon_scheduler
from ._steps import (
    AfterTools,
    BeginIteration,
    CallModel,
    Finish,
    HandleResponse,
    RunTools,
    Step,
    TransitionReason,
)
from ._suspended import Resumption, suspended_end
from ._tokens import text_tokens
from ._tool_batch import (
    ToolBatcher,
    refused_call_result,
    truncated_call_result,
    unanswered_call_result,
)
from ._tracing import NULL_SPAN, Span, make_tracer
from ._transcript import TRUNCATION_MARKER
from ._transcript_view import TranscriptResults

if TYPE_CHECKING:
    from ..scheduling import Dispatcher
    from ..sessions import Suspension
    from ._result import RunResult

__all__ = ["NO_MODEL_REACHED", "RunLoop"]

NO_MODEL_REACHED = "no model was reached"
"""How the detail of a run's end begins when its model call failed without
reaching a model (`ModelError.reached_model` False: no key, no server, no API
at that URL). The CLI keeps no session for such a run."""

logger = logging.getLogger("toolweave.loop")


@final
class RunLoop:
    """One run of an agent: the driver and its steps.

    Lives in one task (its own, started by `Agent.open_run`); `control` may be
    used from any task of the same event loop.
    """

    def __init__(
        self,
        setup: RunSetup,
        *,
        prompt: str,
        history: Sequence[Message],
        emit: Callable[[Event], None],
        dispatcher: Dispatcher,
        run_id: str,
        before_start: StartBarrier | None = None,
        resume: Resumption | None = None,
    ) -> None:
        cfg = setup.config
        self.setup, self.cfg, self.prompt, self.run_id = setup, cfg, prompt, run_id
        self.emit = emit
        self.clock = fast_clock()
        self.control = RunControl()
        self.conversation = Conversation(history, emit=emit)
        self.resumed = bool(history)
        self.system = setup.system
        self.context = ContextFeed(
            cfg.context_providers, workspace=cfg.workspace, prompt=prompt, emit=emit
        )
        self.iteration = 0
        self.tracer = make_tracer(cfg.tracing)
        self.run_span: Span = NULL_SPAN
        self.iteration_span: Span = NULL_SPAN
        self.costs = CostTracker(setup.prices)
        self.budget = setup.budget()
        self.stall = StalledIterationGuard(cfg.stall_limit)
        # The agent's session state with this run's transcript: runs share
        # what is known of the files on disk, not what their model has seen.
        self.state = replace(
            setup.state,
            transcript=TranscriptResults(self.conversation),
            call_scope=setup.state.call_scope or run_id,
        )
        self.resume = resume
        """The suspended run this run continues, if it is a resume (`Agent.resume`)."""
        self.suspend = SuspendPoint(
            enabled=cfg.on_ask == "suspend",
            decisions=None if resume is None else resume.decisions,
            always=() if resume is None else resume.suspension.always,
        )
        self.suspension: Suspension | None = None
        """Set when this run suspended for a person's decision."""
        self.runner = setup.runner(
            emit,
            self.budget,
            self.state,
            before_start=before_start,
            halt=self.control.halt,
            suspend=self.suspend,
        )
        self.batcher = ToolBatcher(
            dispatcher=dispatcher,
            registry=setup.registry,
            runner=self.runner,
            halt=self.control.halt,
            emit=emit,
            tracer=self.tracer,
            clock=self.clock,
            config=cfg,
        )
        self.caller = ModelCaller(
            setup.model,
            fallbacks=setup.fallbacks,
            policy=cfg.retry,
            emit=emit,
            tracer=self.tracer,
            control=self.control,
            clock=self.clock,
        )
        self.shrinker = Shrinker(self)
        policy = cfg.micro_compaction
        self.micro = MicroCompactor(self, policy) if policy is not None else None
        self.endings = Endings(self)
        self.discarded = DiscardedCalls(self)
        self._stack = AsyncExitStack()
        self.eager: EagerBatch | None = None
        self.result: RunResult | None = None
        """Set once the run ended (just before RunFinished is emitted)."""
        self._spawn: Spawn | None = None
        self._schedule: Schedule | None = None
        self._metadata = {"run_id": run_id}
        self._read_state = setup.state.read_files.snapshot()

    # -- the driver -------------------------------------------------------------------

    async def drive(self) -> RunResult:
        """Run to the end and return the result. Never raises for the model's or a tool's fault."""
        # a raising access/concurrency declaration becomes a Warning event
        with reporting_declaration_errors(lambda line: self.emit(WarningEvent(line))):
            return await self._drive()

    async def _drive(self) -> RunResult:
        self.endings.bind_costs()
        self._schedule = soon_scheduler()
        async with anyio.create_task_group() as tg:  # helpers of early tool starts

            def spawn(job: Callable[[], Coroutine[Any, Any, None]]) -> None:
                tg.start_soon(job)

            self._spawn = spawn
            try:
                step = await self._start()
            except Exception as exc:
                step = self._crashed(exc)
            while not isinstance(step, Finish):
                async with AsyncExitStack() as self._stack:  # one iteration's resources
                    step = await self._iterate(step)
                self.iteration_span.end()
        assert isinstance(step, Finish)
        await self.discarded.gather()
        self.discarded.warn_undelivered()
        return await self.endings.finish(step)

    async def _iterate(self, step: Step) -> Step:
        """Advance until the loop comes back to its head or ends."""
        while True:
            try:
                step = await self._advance(step)
            except Exception as exc:
                return self._crashed(exc)
            if isinstance(step, BeginIteration | Finish):
                return step

    def _crashed(self, exc: Exception) -> Finish:
        logger.exception("agent run %s failed", self.run_id, exc_info=exc)
        self.close_open_calls("the run failed with an internal error")
        return Finish(
            CompletionReason.ERROR,
            detail=f"internal error: {type(exc).__name__}: {exc}",
        )

    def close_open_calls(self, why: str) -> None:
        """Answer the last assistant message's calls if no result message followed it.

        Keeps the transcript valid when a step failed (or the run was cancelled)
        between appending a response and appending its results: each open call
        gets `unanswered_call_result(call, why)`. Does nothing otherwise.
        """
        calls = self.conversation.open_calls()
        if calls:
            results = tuple(unanswered_call_result(c, why) for c in calls)
            self.conversation.append(Message("user", results))

    async def _advance(self, step: Step) -> Step:
        match step:
            case BeginIteration():
                return await self._begin_iteration(step)
            case CallModel():
                return await self._call_model(step)
            case HandleResponse():
                return await self._handle_response(step)
            case RunTools():
                return await self._run_tools(step)
            case AfterTools():
                return self._after_tools(step)
            case Finish():
                return step
            case _:
                assert_never(step)

    # -- steps -----------------------------------------------------------------------------

    async def _start(self) -> Step:
        setup = self.setup
        self.run_span = self.tracer.start(
            f"invoke_agent {setup.name}",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": setup.name,
                "gen_ai.conversation.id": self.run_id,
                "gen_ai.request.model": setup.model.name,
            },
        )
        resume = self.resume
        self.emit(RunStarted(self.run_id, resume.prompt() if resume else self.prompt))
        if (
            self.cfg.permission_mode is PermissionMode.ACCEPT_EDITS
            and self.state.workspace is None
        ):
            self.emit(
                WarningEvent(
                    "permission_mode is accept_edits but no workspace is set"
                    " (AgentConfig(workspace=...)): edits cannot be judged inside it,"
                    " so none is approved in advance"
                )
            )
        self.system, first = await self.context.start(self.system)
        system = self.system
        self.conversation.set_overhead(  # estimated only if the figure is read
            lambda: (
                text_tokens(system or "") + setup.definitions.tokens(setup.tool_defs)
            )
        )
        if resume is not None:
            # the suspended batch goes on where it stopped: no new prompt
            self.iteration = self.batcher.iteration = resume.suspension.iteration
            return RunTools(resume.response)
        started = RunStartInput(
            run_id=self.run_id, prompt=self.prompt, resumed=self.resumed
        )
        first = await with_run_start_context(first, self.cfg.hooks, started, self.emit)
        self.conversation.append(first)
        return BeginIteration()

    async def _begin_iteration(self, step: BeginIteration) -> Step:
        if self.control.halted:
            return self.control.finish()
        micro = await self.micro.apply() if self.micro is not None else None
        verdict = self.budget.check(
            now=anyio.current_time() if self.budget.deadline is not None else 0.0,
            total_tokens=self.costs.total_tokens,
            cost=self.costs.cost,
            context_tokens=self.conversation.context_tokens,  # read only if it counts
        )
        if verdict.decision is BudgetDecision.STOP:
            assert verdict.reason is not None
            return Finish(verdict.reason, detail=verdict.detail)
        if self.iteration >= self.cfg.max_iterations:
            return Finish(
                CompletionReason.MAX_ITERATIONS,
                detail=f"reached max_iterations={self.cfg.max_iterations}"
                " without a final answer",
            )
        reason, note = step.reason, step.note
        boundary = None
        if verdict.decision is BudgetDecision.SHOULD_COMPACT:
            boundary = await self.shrinker.auto_compact()
            if boundary is not None:
                # seed 002 §8: BUDGET_COMPACT wins; the other reason becomes the note
                note = reason.value if reason is not None else ""
                reason = TransitionReason.BUDGET_COMPACT
        if self.iteration:  # the first call got everything from `_start`
            reminder = await self.context.refresh()
            if reminder is not None:
                self.conversation.append(reminder)
        self._open_iteration(reason, note)
        if micro is not None:
            self.emit(micro)
        if boundary is not None:
            self.emit(boundary)  # seed 002 §9: right before IterationStarted
        self.emit(IterationStarted(self.iteration, at=self.clock()))
        return CallModel()

    def _open_iteration(self, reason: TransitionReason | None, note: str) -> None:
        self.iteration += 1
        self.batcher.iteration = self.iteration
        if reason is not None:
            self.emit(LoopTransition(reason.value, detail=note, at=self.clock()))
        if not self.tracer.enabled:
            return
        span = self.tracer.start(
            f"iteration {self.iteration}",
            parent=self.run_span,
            attributes={"toolweave.iteration": self.iteration},
        )
        if reason is not None:
            span.set("toolweave.loop.transition", reason.value)
            span.set("toolweave.loop.transition.note", note or None)
        self.iteration_span = span
        self.batcher.parent_span = span

    def request(self) -> ModelRequest:
        """The request for the next model call."""
        cfg = self.cfg
        return ModelRequest(
            self.conversation.snapshot(),
            system=self.system,
            tools=self.setup.tool_defs,
            parallel_tool_calls=cfg.parallel_tool_calls,
            max_tokens=cfg.max_output_tokens,
            temperature=cfg.temperature,
            metadata=self._metadata,
        )

    def _eager_batch(self) -> EagerBatch | None:
        if not self.batcher.overlap:
            return None
        assert self._spawn is not None
        assert self._schedule is not None
        eager = self.batcher.eager_batch(self._spawn, self._schedule)
        self._stack.push_async_callback(eager.close)
        return eager

    async def _call_model(self, step: CallModel) -> Step:
        await self.discarded.gather()  # a call retried after shrinking the prompt
        blocked = await self.shrinker.ensure_fits()  # never send what cannot fit
        if blocked is not None:
            return blocked
        self.conversation.note_sent()
        self.eager = self._eager_batch()
        try:
            response = await self.caller.call(
                self.request(),
                iteration=self.iteration,
                parent=self.iteration_span,
                eager=self.eager,
            )
        except PromptTooLongError as exc:
            if step.shrunk_for_length:
                return Finish(
                    CompletionReason.CONTEXT_WINDOW_EXCEEDED,
                    detail="the prompt is too long even after shrinking it once"
                    f" (the provider said: {exc}); the run stops rather than"
                    " drop more without end",
                )
            return await self.shrinker.recover_prompt_too_long(exc)
        except ModelError as exc:
            # A request that never reached a model (no key, no server, no API
            # at that URL) is not a model call that failed: the record says so.
            said = (
                NO_MODEL_REACHED if not exc.reached_model else "the model call failed"
            )
            return Finish(
                CompletionReason.ERROR, detail=f"{said}: {type(exc).__name__}: {exc}"
            )
        if isinstance(response, Halted):
            await self.discarded.halted(response.partial)
            return self.control.finish()
        self.account(response.model or self.setup.model.name, response.usage)
        window = self.shrinker.window
        if not self.conversation.note_response(response, window=window):
            self.emit(
                WarningEvent(
                    f"the provider reported {response.usage.total_tokens:,} tokens for a"
                    f" request it accepted, more than the context window of {window:,}:"
                    " the count is not believed; the context is estimated instead"
                )
            )
        if self.control.halted:
            await self.discarded.halted(response)
            return self.control.finish()
        return HandleResponse(response)

    def account(self, model: str, usage: Usage) -> None:
        """Count tokens and cost against `model`; warn once per unpriced model."""
        warning = self.costs.add(model, usage)
        if warning is not None:
            self.emit(WarningEvent(warning))

    async def _handle_response(self, step: HandleResponse) -> Step:
        response = step.response
        if response.content:  # recorded before its tools run (see the module docstring)
            self.conversation.append(response.to_message())
        calls = response.tool_calls
        truncated = response.stop_reason is StopReason.MAX_TOKENS
        refused = response.stop_reason is StopReason.REFUSAL
        if calls and not truncated and not refused:
            return RunTools(response)
        if calls:
            # seed 002 §2.2: a truncated response runs nothing (nor a refused one);
            # what had started while it streamed keeps its result
            answer = truncated_call_result if truncated else refused_call_result
            results = await self.discarded.answer_void(calls, answer)
            return AfterTools(response, results, truncated=truncated)
        await self.discarded.gather()
        self.stall.reset()
        if truncated:
            return Finish(
                CompletionReason.TRUNCATED,
                output=f"{response.text}\n\n{TRUNCATION_MARKER}",
                detail="the final answer was cut at max_tokens",
            )
        return await self.endings.after_final_answer(response)

    async def _run_tools(self, step: RunTools) -> Step:
        stream = await self.eager.settle() if self.eager is not None else None
        done = None
        if (
            self.resume is not None
            and self.iteration == self.resume.suspension.iteration
        ):
            done = self.resume.suspension.done  # ran before the suspension: kept
            self.runner.restore_signals(self.resume.suspension.signals)
        try:
            results = await self.batcher.run(step.response.tool_calls, stream, done)
        except (KeyboardInterrupt, SystemExit) as exc:
            # A tool raised it: record the batch (every call answered), then let it go.
            answered = results_of(exc)
            if answered is not None:
                self.conversation.append(Message("user", tuple(answered)))
            raise
        await self.discarded.gather()
        self._report_read_state()
        if self.suspend.tripped:
            return self._suspended(results)
        return AfterTools(step.response, results)

    def _suspended(self, results: Sequence[ToolResult]) -> Finish:
        """The batch waits for a person: the run ends SUSPENDED, its state kept.

        Nothing is appended to the transcript (the calls are answered on
        resume); `RunSuspended` tells a store what waits and what was held.
        """
        # the batch is not over: what its hooks said applies once it is (on resume)
        waiting = {p.key for p in self.suspend.pending}  # their hooks run on resume
        kept = tuple(s for s in self.runner.keep_signals() if s[1] not in waiting)
        suspension, finish = suspended_end(
            self.suspend,
            messages=self.conversation.snapshot(),
            calls=self.batcher.ran,
            results=results,
            iteration=self.iteration,
            always=self.runner.always,
            signals=kept,
        )
        self.suspension = suspension
        self.emit(
            RunSuspended(
                suspension.pending,
                iteration=suspension.iteration,
                always=suspension.always,
                held=self.suspend.held,
                signals=kept,
                at=self.clock(),
            )
        )
        return finish

    def _report_read_state(self) -> None:
        """Emit the read ledger if the batch changed it (a session stores it for resume)."""
        files = self.setup.state.read_files.snapshot()
        if files != self._read_state:
            self._read_state = files
            self.emit(ReadStateChanged(files, at=self.clock()))

    def _after_tools(self, step: AfterTools) -> Step:
        halted = self.control.halted
        signals = self.runner.take_signals()
        extras: list[Text] = []
        if signals.additional_context:
            context = "\n".join(signals.additional_context)
            extras.append(Text(f"<system-reminder>\n{context}\n</system-reminder>"))
        ending: Finish | None = None
        if halted:
            ending = self.control.finish()
        elif signals.stop:
            ending = Finish(
                CompletionReason.HOOK_STOPPED,
                detail=signals.reason or "a hook stopped the run",
            )
        else:
            stalled = self.stall.record(step.results, truncated=step.truncated)
            if stalled is not None:
                ending = Finish(CompletionReason.ERROR, detail=stalled)
        queued = self.control.take_queue() if ending is None else []
        notes = self.discarded.take_notes()
        self.conversation.append(
            Message("user", (*step.results, *extras, *notes, *queued))
        )
        if ending is not None:
            return ending
        if step.truncated:
            return BeginIteration(
                TransitionReason.MAX_TOKENS_REFUSED,
                note="queued input" if queued else "",
            )
        if queued:
            return BeginIteration(TransitionReason.QUEUED_INPUT)
        return BeginIteration(TransitionReason.NEXT_ITERATION)
