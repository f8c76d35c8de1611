"""Keeping the conversation inside the context window: auto-compaction and prompt-too-long recovery.

Auto-compaction runs when the budget says SHOULD_COMPACT and has a
circuit breaker: after `compaction_max_failures` failures in a row it stays off
for the rest of the run. Prompt-too-long recovery (two tiers)
first summarises, and only if that fails drops the oldest rounds; the call is
then retried once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, final

from .._exceptions import PromptTooLongError
from ..events import CompactBoundary, CompletionReason, Event, LoopTransition
from ..events import Warning as WarningEvent
from ..messages import Usage
from ._compaction import Compacted, Compactor, drop_oldest_rounds
from ._config import AgentConfig
from ._context_feed import ContextFeed
from ._control import RunControl
from ._conversation import Conversation
from ._setup import RunSetup
from ._steps import CallModel, Finish, Step, TransitionReason

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

    def account(self, model: str, usage: Usage) -> None:
        """Count a model call's usage against the run's budgets and costs."""
        ...


_DROP_TARGET_SHARE = 0.5


@final
class Shrinker:
    """Compacts a run's conversation on demand. Loop task only."""

    def __init__(self, loop: ShrinkingLoop) -> None:
        self._loop = loop
        self._compactor = Compactor(
            loop.setup.compaction_model, keep_recent=loop.cfg.compaction_keep_recent
        )
        self.failures = 0
        """Consecutive auto-compaction failures."""

    @property
    def breaker_open(self) -> bool:
        """True once auto-compaction gave up for this run."""
        return self.failures >= self._loop.cfg.compaction_max_failures

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
        loop = self._loop
        if self.breaker_open:
            return None
        outcome = await self._summarise()
        if isinstance(outcome, str):
            if not loop.control.halted:
                self.failures += 1
                loop.emit(WarningEvent(f"auto-compaction failed: {outcome}"))
                if self.failures >= loop.cfg.compaction_max_failures:
                    loop.emit(
                        WarningEvent(
                            f"auto-compaction is off for this run after {self.failures}"
                            " consecutive failures"
                        )
                    )
            return None
        self.failures = 0
        return self._apply(outcome, "auto")

    async def recover_prompt_too_long(self, error: PromptTooLongError) -> Step:
        """Shrink the conversation after the provider said it does not fit; retry once."""
        loop = self._loop
        outcome = await self._summarise()
        if loop.control.halted:
            return loop.control.finish()
        how = "summarised older turns"
        if isinstance(outcome, str):
            window = loop.setup.model.context_window
            target = int(window * _DROP_TARGET_SHARE) if window else None
            dropped = drop_oldest_rounds(
                loop.conversation.messages, target_tokens=target, system=loop.system
            )
            if isinstance(dropped, str):
                return Finish(
                    CompletionReason.ERROR,
                    detail=f"the prompt is too long ({error}); compaction failed"
                    f" ({outcome}) and dropping old messages failed ({dropped})",
                )
            outcome, how = (
                dropped,
                f"dropped the oldest messages (compaction failed: {outcome})",
            )
        loop.emit(self._apply(outcome, "prompt_too_long"))
        loop.emit(
            LoopTransition(TransitionReason.PROMPT_TOO_LONG_RETRY.value, detail=how)
        )
        return CallModel(shrunk_for_length=True)
