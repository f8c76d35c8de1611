"""RunSetup: what an Agent resolves once and hands each run, and the parts built from it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING

import anyio

from ..execution import RunDeadline, StartBarrier, SuspendPoint, ToolRunner
from ._budget import BudgetTracker
from ._tokens import DefinitionsEstimate

if TYPE_CHECKING:
    from ..events import Event
    from ..models import Model, ToolDefinition
    from ..scheduling import InterruptToken
    from ..tools import SessionState, ToolRegistry
    from ._config import AgentConfig
    from ._cost import PriceTable

__all__ = ["RunSetup"]


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What an Agent hands each run: resolved once, shared by its runs."""

    _: KW_ONLY
    name: str
    """The agent's name."""
    model: Model
    """The agent's model (not yet behind the retry gateway)."""
    fallbacks: tuple[Model, ...]
    """Models the gateway may switch to."""
    compaction_model: Model
    """The model that writes summaries (behind its own gateway)."""
    registry: ToolRegistry
    """The tools."""
    tool_defs: tuple[ToolDefinition, ...]
    """The tools as the model is told about them."""
    system: str | None
    """The system prompt, before context is folded in."""
    config: AgentConfig
    """The configuration."""
    prices: PriceTable
    """The price table."""
    state: SessionState
    """Session state shared by the agent's runs."""
    definitions: DefinitionsEstimate = field(default_factory=DefinitionsEstimate)
    """The estimate of `tool_defs`, shared by the agent's runs while its tools stay the same."""

    def runner(
        self,
        emit: Callable[[Event], None],
        budget: BudgetTracker | None = None,
        state: SessionState | None = None,
        *,
        before_start: StartBarrier | None = None,
        halt: InterruptToken | None = None,
        suspend: SuspendPoint | None = None,
    ) -> ToolRunner:
        """A fresh lifecycle runner for one run (its signals and ledger are per run).

        `budget`'s wall clock, if any, bounds every call (`RunDeadline`).
        `state` is the run's view of the session state (default: the agent's).
        `before_start`: the run's start barrier (a recorder's), if any.
        `halt`: the run's halt; once set, a call waiting for permission is
        answered "not run" (see `ToolRunner`).
        `suspend`: the run's suspension state (`AgentConfig.on_ask`, a resume's
        decisions).
        """
        cfg = self.config
        deadline = None
        if budget is not None and budget.deadline is not None:
            what = f"the run's wall-clock budget (max_wall_clock={budget.max_wall_clock:g} s)"
            deadline = RunDeadline(budget.deadline, what)
        return ToolRunner(
            self.registry,
            state=self.state if state is None else state,
            config=cfg.execution,
            hooks=cfg.hooks,
            permissions=cfg.permissions,
            mode=cfg.permission_mode,
            ask=cfg.ask,
            on_event=emit,
            audit=cfg.audit,
            deadline=deadline,
            before_start=before_start,
            interrupt=halt,
            suspend=suspend,
        )

    def budget(self) -> BudgetTracker:
        """A budget tracker started now (call inside the event loop)."""
        cfg = self.config
        window = self.model.context_window
        threshold = cfg.compaction_threshold
        return BudgetTracker(
            started_at=anyio.current_time(),
            max_total_tokens=cfg.max_total_tokens,
            max_wall_clock=cfg.max_wall_clock,
            max_cost_usd=cfg.max_cost_usd,
            compaction_tokens=None
            if threshold is None or window is None
            else int(window * threshold),
        )
