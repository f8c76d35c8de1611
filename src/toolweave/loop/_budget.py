"""Budgets: hard stops (tokens, wall clock, USD) and the soft compaction hint."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import final

from ..events import CompletionReason

__all__ = ["BudgetDecision", "BudgetTracker", "BudgetVerdict"]


class BudgetDecision(enum.Enum):
    """What the budget says before an iteration."""

    CONTINUE = "continue"
    """Go on."""
    SHOULD_COMPACT = "should_compact"
    """Go on, but compact the conversation first (soft; only after every hard check passed)."""
    STOP = "stop"
    """A hard budget is spent: end the run."""


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    """The budget's decision, with the completion reason and words when it is STOP."""

    decision: BudgetDecision
    """What to do."""
    _: KW_ONLY
    reason: CompletionReason | None = None
    """BUDGET_EXCEEDED or COST_BUDGET_EXCEEDED when `decision` is STOP."""
    detail: str = ""
    """What was spent, against which limit."""


_CONTINUE = BudgetVerdict(BudgetDecision.CONTINUE)


@final
@dataclass(frozen=True, slots=True)
class BudgetTracker:
    """Decides, before each iteration, whether the run may go on.

    Hard limits are checked first and any of them stops the run; only if none
    is hit may the soft compaction threshold ask for compaction — a run that
    must stop is never prolonged by compacting it. A limit of None
    is unlimited.
    """

    _: KW_ONLY
    started_at: float
    """anyio time the run started."""
    max_total_tokens: int | None = None
    """Tokens (input, cached and output, summed over every model call) the run may use."""
    max_wall_clock: float | None = None
    """Seconds the run may last."""
    max_cost_usd: float | None = None
    """USD the run may spend."""
    compaction_tokens: int | None = None
    """Context size (tokens) at which compaction is suggested; None = never."""

    @property
    def deadline(self) -> float | None:
        """The anyio time the wall-clock budget runs out, or None."""
        if self.max_wall_clock is None:
            return None
        return self.started_at + self.max_wall_clock

    def check(
        self,
        *,
        now: float,
        total_tokens: int,
        cost: float,
        context_tokens: int | Callable[[], int],
    ) -> BudgetVerdict:
        """Judge the run's spending so far.

        Args:
            now: The current anyio time.
            total_tokens: Tokens used so far by every model call of the run.
            cost: USD spent so far.
            context_tokens: Estimated size of the next request's context, or
                what estimates it: then called only when a compaction threshold
                is set and no hard limit stopped the run (estimating costs).
        """
        hard = self.check_hard(now=now, total_tokens=total_tokens, cost=cost)
        if hard is not None:
            return hard
        if self.compaction_tokens is None:
            return _CONTINUE
        if callable(context_tokens):
            context_tokens = context_tokens()
        if context_tokens >= self.compaction_tokens:
            return BudgetVerdict(
                BudgetDecision.SHOULD_COMPACT,
                detail=(
                    f"context of ~{context_tokens} tokens reached the compaction"
                    f" threshold of {self.compaction_tokens}"
                ),
            )
        return _CONTINUE

    def check_hard(
        self, *, now: float, total_tokens: int, cost: float
    ) -> BudgetVerdict | None:
        """The STOP verdict of the first hard limit spent, or None if none is."""
        if self.max_total_tokens is not None and total_tokens >= self.max_total_tokens:
            return BudgetVerdict(
                BudgetDecision.STOP,
                reason=CompletionReason.BUDGET_EXCEEDED,
                detail=f"token budget spent: {total_tokens} of {self.max_total_tokens} tokens",
            )
        deadline = self.deadline
        if deadline is not None and now >= deadline:
            return BudgetVerdict(
                BudgetDecision.STOP,
                reason=CompletionReason.BUDGET_EXCEEDED,
                detail=f"wall-clock budget of {self.max_wall_clock:g} s spent",
            )
        if self.max_cost_usd is not None and cost >= self.max_cost_usd:
            return BudgetVerdict(
                BudgetDecision.STOP,
                reason=CompletionReason.COST_BUDGET_EXCEEDED,
                detail=f"cost budget spent: ${cost:.4f} of ${self.max_cost_usd:.4f}",
            )
        return None
