"""The RunStart hook's input and answer (Claude Code's SessionStart, per run)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["RunStartDecision", "RunStartHook", "RunStartInput", "RunStartOutcome"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStartInput:
    """What a RunStart hook sees: a run is about to make its first model call."""

    run_id: str
    """The run's id (as in `RunStarted`)."""
    prompt: str
    """The user's message that starts the run."""
    resumed: bool = False
    """True if the run continues earlier history (a resumed session)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStartDecision:
    """A RunStart hook's answer; the default adds nothing."""

    additional_context: str | None = None
    """Text the model gets with the first message, as a ``<system-reminder>``."""


RunStartHook: TypeAlias = Callable[
    [RunStartInput], RunStartDecision | Awaitable[RunStartDecision | None] | None
]
"""A sync or async callable run once when a run starts."""


@dataclass(frozen=True, slots=True)
class RunStartOutcome:
    """What the RunStart hooks of one run said, in registration order."""

    contexts: tuple[str, ...] = ()
    """Every non-empty ``additional_context``."""
    problems: tuple[str, ...] = ()
    """One line per hook that raised or returned something else (it was ignored)."""
