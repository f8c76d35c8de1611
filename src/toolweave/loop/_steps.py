"""The loop's typed states: each step function takes one and returns the next."""

from __future__ import annotations

import enum
from dataclasses import KW_ONLY, dataclass
from typing import TypeAlias

from ..events import CompletionReason
from ..messages import ModelResponse, ToolResult

__all__ = [
    "AfterTools",
    "BeginIteration",
    "CallModel",
    "Finish",
    "HandleResponse",
    "RunTools",
    "Step",
    "TransitionReason",
]


class TransitionReason(enum.Enum):
    """Why the loop goes round again. Only reasons with a real re-entry site exist."""

    NEXT_ITERATION = "next_iteration"
    """The model called tools; their results go back to it."""
    QUEUED_INPUT = "queued_input"
    """Messages sent with `AgentRun.send` were injected."""
    BUDGET_COMPACT = "budget_compact"
    """The context reached the compaction threshold and was compacted first."""
    MAX_TOKENS_REFUSED = "max_tokens_refused"
    """A response cut at max_tokens had its tool calls refused; the model tries again."""
    PROMPT_TOO_LONG_RETRY = "prompt_too_long_retry"
    """The request did not fit; the conversation was shrunk and the call is retried once."""
    STOP_HOOK_BLOCKED = "stop_hook_blocked"
    """A stop hook refused the final answer; its reason went to the model."""


@dataclass(frozen=True, slots=True)
class BeginIteration:
    """The loop head: check interrupts and budgets, maybe compact, then call the model."""

    reason: TransitionReason | None = None
    """Why the loop came round again (None for the first iteration)."""
    note: str = ""
    """A secondary reason folded into the transition (e.g. queued input during compaction)."""


@dataclass(frozen=True, slots=True)
class CallModel:
    """Send the conversation to the model."""

    _: KW_ONLY
    shrunk_for_length: bool = False
    """The conversation was already shrunk after a prompt-too-long; do not retry again."""


@dataclass(frozen=True, slots=True)
class HandleResponse:
    """Judge a complete response: final answer, truncation, or tools to run."""

    response: ModelResponse
    """The response."""


@dataclass(frozen=True, slots=True)
class RunTools:
    """Run (or harvest) the response's tool calls."""

    response: ModelResponse
    """The response whose calls run."""


@dataclass(frozen=True, slots=True)
class AfterTools:
    """Record a batch and decide whether to go on (hook stop, stall guard, queued input)."""

    response: ModelResponse
    """The response the results answer."""
    results: tuple[ToolResult, ...]
    """One result per call, in call order."""
    _: KW_ONLY
    truncated: bool = False
    """The calls were refused because the response was cut at max_tokens."""


@dataclass(frozen=True, slots=True)
class Finish:
    """The run ends."""

    reason: CompletionReason
    """How."""
    _: KW_ONLY
    output: str | None = None
    """The output; None = the text of the last assistant message."""
    detail: str = ""
    """Why, in words."""


Step: TypeAlias = (
    BeginIteration | CallModel | HandleResponse | RunTools | AfterTools | Finish
)
"""Any state of the loop."""
