"""RunResult: how a run ended, what it said, and what it cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING

from ..events import CompletionReason, PendingApproval, RunFinished
from ..messages import Message, Usage
from ._cost import ModelCost

if TYPE_CHECKING:
    from ..sessions import Suspension

__all__ = ["RunResult", "finished_event"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of one run. Every run has one, whatever way it ended."""

    output: str
    """The final text; for TRUNCATED the partial text plus a visible marker."""
    completion_reason: CompletionReason
    """How the run ended."""
    _: KW_ONLY
    messages: tuple[Message, ...] = ()
    """The whole transcript (every tool call answered, in order; SUSPENDED: it ends
    with the calls that wait, unanswered until the resume)."""
    usage: Usage = field(default_factory=Usage)
    """Tokens of every model call of the run, summed."""
    model_usage: Mapping[str, ModelCost] = field(default_factory=dict)
    """Tokens and USD per model (the agent's, fallbacks, the compaction model)."""
    cost: float = 0.0
    """Estimated USD (unpriced models count as zero, with a Warning event)."""
    iterations: int = 0
    """Model calls made by the loop (compaction calls not counted)."""
    detail: str = ""
    """Why it ended, in words (for every reason other than COMPLETED)."""
    run_id: str = ""
    """The run's id (as in RunStarted)."""
    suspension: Suspension | None = field(default=None, compare=False, repr=False)
    """SUSPENDED only: what a resume continues from (``Agent.resume(result.suspension,
    decisions)``; single use)."""

    @property
    def pending(self) -> tuple[PendingApproval, ...]:
        """SUSPENDED only: the calls that wait for a person's decision, in call order."""
        return () if self.suspension is None else self.suspension.pending

    @property
    def ok(self) -> bool:
        """True only for COMPLETED: a full answer was given."""
        return self.completion_reason is CompletionReason.COMPLETED


def finished_event(result: RunResult) -> RunFinished:
    """The RunFinished event that reports `result` (the last event of every run)."""
    return RunFinished(
        result.completion_reason,
        result.output,
        usage=result.usage,
        cost=result.cost,
        messages=result.messages,
        detail=result.detail,
        extra={"iterations": result.iterations, "run_id": result.run_id},
    )
