"""Keeping the conversation inside the context window: compaction, guard, recovery.

Three mechanisms: auto-compaction, the pre-send guard and prompt-too-long recovery.

Auto-compaction runs when the budget says SHOULD_COMPACT and has a
circuit breaker: after `compaction_max_failures` failures in a row it stays off
for the rest of the run.

A request the guard (`ContextGuard`) judges BLOCK is never sent; it is shrunk
first, in tiers, each only if the one before left it too big:

1. summarise older turns (skipped once the breaker is open);
2. drop the oldest whole rounds (the first message and every tool pair kept);
3. clear tool results, oldest first, to stubs naming the call and the file the
   full text was saved to (`_clearing`); the latest round's too, if it must.

If it still does not fit, the run ends as CONTEXT_WINDOW_EXCEEDED and the
request is not sent. Prompt-too-long recovery (the provider refused a request
the estimate let through) takes the same tiers once, after learning from the
provider's message how big the request really was (and, if it says, the
window), then retries the call once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, final

import anyio.to_thread

from .._exceptions import PromptTooLongError
from ..events import CompactBoundary, CompletionReason, Event, LoopTransition
from ..events import Warning as WarningEvent
from ..messages import Message, Usage
from ..tools import SessionState
from ._clearing import ResultSaver, clear_results, clearable, result_slots
from ._compaction import Compacted, Compactor, drop_oldest_rounds, split_point
from ._config import AgentConfig
from ._context_feed import ContextFeed
from ._control import RunControl
from ._conversation import Conversation
from ._model_call import ModelCaller
from ._refusal_sizes import stated_sizes
from ._setup import RunSetup
from ._steps import CallModel, Finish, Step, TransitionReason
from ._tokens import block_tokens, messages_tokens
from ._window import ContextGuard, ContextLevel, ContextVerdict

__all__ = ["Shrinker", "ShrinkingLoop"]


class ShrinkingLoop(Protocol):
    """What `Shrinker` reads of its run (the `RunLoop`)."""

    @property
    def setup(self) -> RunSetup:
        """What the agent hands each run (the models)."""
        ...

    @property
    def cfg(self) -> AgentConfig:
        """The run's config."""
        ...

    @property
    def context(self) -> ContextFeed:
        """The run's context providers."""
        ...

    @property
    def control(self) -> RunControl:
        """Halting and finishing the run."""
        ...

    @property
    def conversation(self) -> Conversation:
        """The run's transcript."""
        ...

    @property
    def system(self) -> str | None:
        """The system prompt as sent."""
        ...

    @property
    def emit(self) -> Callable[[Event], None]:
        """Hands an event to the run's listeners."""
        ...

    @property
    def caller(self) -> ModelCaller:
        """Calls the run's model (its name names the window)."""
        ...

    @property
    def state(self) -> SessionState:
        """The run's session state (where saved results go)."""
        ...

    def account(self, model: str, usage: Usage) -> None:
        """Count a model call's usage against the run's budgets and costs."""
        ...


_STUB_TOKENS = 80
"""About what a stub weighs (its text names the call, its size and a path)."""


@final
class Shrinker:
    """Keeps a run's requests inside the window. Loop task only."""

    def __init__(self, loop: ShrinkingLoop) -> None:
        self._loop = loop
        self._compactor = Compactor(
            loop.setup.compaction_model, keep_recent=loop.cfg.compaction_keep_recent
        )
        self.failures = 0
        """Consecutive auto-compaction failures."""
        self.window = loop.setup.model.context_window
        """The window requests must fit (the model's, or what a refusal stated)."""
        self._warned = False

    @property
    def breaker_open(self) -> bool:
        """True once auto-compaction gave up for this run."""
        return self.failures >= self._loop.cfg.compaction_max_failures

    @property
    def guard(self) -> ContextGuard:
        """The guard for the current window."""
        cfg = self._loop.cfg
        return ContextGuard(
            self.window,
            output_tokens=cfg.max_output_tokens,
            warn_share=cfg.context_warning_threshold,
            compact_share=cfg.compaction_threshold,
        )

    # -- measuring ----------------------------------------------------------------

    def _measure(self, messages: Sequence[Message]) -> int:
        """The estimate of a request holding `messages` (nothing provider-counted)."""
        conversation = self._loop.conversation
        raw = messages_tokens(messages) + conversation.overhead_tokens
        return round(raw * conversation.scale)

    def _target(self, guard: ContextGuard) -> int | None:
        """What a shrunk request should weigh: under the compaction line, else the limit."""
        limit, window = guard.limit, guard.window
        if limit is None or window is None:
            return None
        share = self._loop.cfg.compaction_threshold
        return min(limit, int(window * share)) if share is not None else limit

    # -- before a request is sent --------------------------------------------------

    async def ensure_fits(self) -> Finish | None:
        """Judge the next request; shrink it if it would not fit. None = send it.

        Returns the run's end (CONTEXT_WINDOW_EXCEEDED, or INTERRUPTED) when it
        cannot be made to fit: the request is then never sent. A checkpoint only
        when it summarises or saves results.
        """
        loop = self._loop
        guard = self.guard
        if guard.limit is None:  # no window known: every verdict is NONE, unestimated
            self._warned = False
            return None
        verdict = guard.judge(loop.conversation.context_tokens())
        self._warn(verdict)
        if verdict.level is not ContextLevel.BLOCK:
            return None
        how, _ = await self._shrink(guard, reason="context_guard")
        if loop.control.halted:
            return loop.control.finish()
        after = guard.judge(loop.conversation.context_tokens())
        if after.level is ContextLevel.BLOCK:
            return self._overflow(verdict, after, how)
        loop.emit(
            WarningEvent(
                f"the next request ({verdict.describe()}) would not fit the context"
                f" window with room for the answer; {how}: now {after.describe()}"
            )
        )
        return None

    def _warn(self, verdict: ContextVerdict) -> None:
        if verdict.level is ContextLevel.NONE:
            self._warned = False
            return
        if verdict.level is ContextLevel.WARN and not self._warned:
            self._warned = True
            self._loop.emit(
                WarningEvent(
                    f"the context is filling up: the next request is {verdict.describe()}"
                )
            )

    def _overflow(
        self, before: ContextVerdict, after: ContextVerdict, how: str
    ) -> Finish:
        loop = self._loop
        first = self._measure(loop.conversation.messages[:1])
        return Finish(
            CompletionReason.CONTEXT_WINDOW_EXCEEDED,
            detail=(
                f"the next request ({before.describe()}) does not fit the context window"
                f" of {loop.caller.model.name} with {self.guard.reserve:,} tokens left"
                f" for the answer, and it was not sent. Tried: {how}, leaving"
                f" {after.describe()}: what remains cannot be dropped (the first message,"
                f" ~{first:,} tokens with the system prompt and tool definitions, and the"
                " latest round). Start a new session, use a model with a larger window,"
                " or give it less to read at once."
            ),
        )

    # -- the tiers -------------------------------------------------------------------

    async def _shrink(self, guard: ContextGuard, *, reason: str) -> tuple[str, bool]:
        """Shrink the conversation in tiers until it fits `guard`.

        Returns what was done, in words, and whether anything changed.
        """
        loop = self._loop
        done: list[str] = []
        changed = False
        old_enough = (
            split_point(loop.conversation.messages, loop.cfg.compaction_keep_recent)
            is not None
        )
        if not self.breaker_open and old_enough:  # else a summary has nothing to do
            outcome = await self._summarise()
            if loop.control.halted:
                return "interrupted", False
            if isinstance(outcome, Compacted):
                self.failures = 0
                loop.emit(self._apply(outcome, reason))
                done.append("summarised older turns")
                changed = True
                if guard.fits(loop.conversation.context_tokens()):
                    return "; ".join(done), changed
            else:
                self._count_failure(outcome)
                done.append(f"the summary failed ({outcome})")
        target = self._target(guard)
        dropped = drop_oldest_rounds(
            loop.conversation.messages,
            target_tokens=target,
            system=None,
            measure=self._measure if target is not None else None,
        )
        if isinstance(dropped, Compacted):
            loop.emit(self._apply(dropped, reason))
            done.append(
                f"dropped the oldest messages ({dropped.before - dropped.after})"
            )
            changed = True
            if guard.fits(loop.conversation.context_tokens()):
                return "; ".join(done), changed
        cleared = await self._clear(target)
        if cleared:
            done.append(f"cleared {cleared} tool results to stubs")
            changed = True
        if not changed:
            done.append("nothing could be dropped")
        return "; ".join(done), changed

    async def _clear(self, target: int | None) -> int:
        """Clear tool results oldest first until the estimate reaches `target`; how many."""
        loop = self._loop
        messages = loop.conversation.snapshot()
        slots = [s for s in result_slots(messages) if clearable(s.result)]
        if not slots:
            return 0
        chosen = []
        remaining = self._measure(messages)
        scale = loop.conversation.scale
        for slot in slots:
            if target is not None and remaining <= target:
                break
            chosen.append(slot)
            remaining -= round(block_tokens(slot.result) * scale) - _STUB_TOKENS
        cleared_messages, cleared = await anyio.to_thread.run_sync(
            lambda: clear_results(
                messages,
                chosen,
                save=ResultSaver(loop.state.results_dir),
                why="to fit the context window",
            )
        )
        if cleared:
            loop.conversation.replace(
                cleared_messages, reason="context_guard", keep_report=True
            )
            loop.emit(
                CompactBoundary(
                    len(messages), len(cleared_messages), reason="context_guard"
                )
            )
        return len(cleared)

    def _count_failure(self, outcome: str) -> None:
        loop = self._loop
        if loop.control.halted:
            return
        self.failures += 1
        loop.emit(WarningEvent(f"auto-compaction failed: {outcome}"))
        if self.failures >= loop.cfg.compaction_max_failures:
            loop.emit(
                WarningEvent(
                    f"auto-compaction is off for this run after {self.failures}"
                    " consecutive failures"
                )
            )

    async def _summarise(self) -> Compacted | str:
        loop = self._loop
        with loop.control.halt_scope() as scope:
            outcome = await self._compactor.compact(loop.conversation.messages)
        if scope.cancelled_caught:
            return "interrupted"
        return outcome

    def _apply(self, outcome: Compacted, reason: str) -> CompactBoundary:
        loop = self._loop
        if outcome.model:
            loop.account(outcome.model, outcome.usage)
        loop.conversation.replace(outcome.messages, reason=reason)
        loop.context.forget()  # what was sent may be summarised away: send it again
        # seed 002 §9: the boundary never reports growth, whatever happened.
        return CompactBoundary(
            outcome.before, min(outcome.after, outcome.before), reason=reason
        )

    async def auto_compact(self) -> CompactBoundary | None:
        """Summarise older turns; the boundary event to emit, or None if nothing changed.

        A checkpoint; interruptible (an interrupted attempt is not a failure).
        """
        if self.breaker_open:
            return None
        outcome = await self._summarise()
        if isinstance(outcome, str):
            self._count_failure(outcome)
            return None
        self.failures = 0
        return self._apply(outcome, "auto")

    async def recover_prompt_too_long(self, error: PromptTooLongError) -> Step:
        """Shrink the conversation after the provider said it does not fit; retry once.

        What the provider's message states (the request's real size, the window)
        is learned first, so the tiers aim at the real size, not the estimate
        that let the request through.
        """
        loop = self._loop
        requested, window = stated_sizes(str(error))
        if window is not None and (self.window is None or window < self.window):
            self.window = window
        if requested is not None:
            loop.conversation.learn_refused(requested)
        guard = self.guard
        if guard.limit is None:  # no window known or stated: aim at half the estimate
            guard = ContextGuard(
                max(loop.conversation.context_tokens() // 2, 1),
                output_tokens=0,
            )
        how, changed = await self._shrink(guard, reason="prompt_too_long")
        if loop.control.halted:
            return loop.control.finish()
        if not changed:
            verdict = guard.judge(loop.conversation.context_tokens())
            return Finish(
                CompletionReason.CONTEXT_WINDOW_EXCEEDED,
                detail=(
                    f"the prompt is too long ({error}); {how}: nothing more can be dropped"
                    f" without losing the first message or the latest round (still"
                    f" {verdict.describe()})"
                ),
            )
        loop.emit(
            LoopTransition(TransitionReason.PROMPT_TOO_LONG_RETRY.value, detail=how)
        )
        return CallModel(shrunk_for_length=True)
