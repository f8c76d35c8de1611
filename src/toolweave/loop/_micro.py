"""Micro-compaction (seed 002 §1): clear tool results the model saw long ago.

A long session re-sends every tool result on every request. Once a result is
old enough (the model has answered `after_turns` times since it saw it, or
`after_seconds` have passed since the loop first held it), it is replaced by a
short stub naming the call and the file its full text was saved to
(`_clearing`). Results are cleared in groups, only when at least `min_chars`
of them are due, so the transcript is rewritten rarely: each rewrite costs the
provider's prompt cache once from the first cleared result on, and the stubs
then read the same on every later request.

Off by default (`AgentConfig.micro_compaction=None`): a cleared result can only
be seen again by reading its saved file or by repeating the call (with its
effects), and the context guard with compaction already keeps every request
inside the window. Turn it on for long sessions of large, re-readable results
(file reads, searches, listings).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, final

import anyio
import anyio.to_thread

from .._exceptions import ConfigError
from ..events import CompactBoundary
from ..tools import SessionState
from ._clearing import ResultSaver, ResultSlot, clear_results, clearable, result_slots
from ._conversation import Conversation

__all__ = ["MicroCompaction", "MicroCompactor", "MicroLoop"]


class MicroLoop(Protocol):
    """What `MicroCompactor` reads of its run (the `RunLoop`)."""

    @property
    def conversation(self) -> Conversation:
        """The run's transcript."""
        ...

    @property
    def state(self) -> SessionState:
        """The run's session state (where cleared results are saved)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class MicroCompaction:
    """When old tool results are cleared to stubs (`AgentConfig.micro_compaction`).

    A result is due once either age is reached (a None age never is); at least
    one must be set.

    Raises:
        ConfigError: if no age is set or a value is out of range.
    """

    after_turns: int | None = 8
    """Model responses that have seen a result before it is cleared."""
    after_seconds: float | None = None
    """Seconds since the run first held a result before it is cleared (anyio time;
    e.g. 300, the lifetime of Anthropic's default prompt cache, after which
    clearing costs no cache)."""
    min_chars: int = 20_000
    """Characters of due results needed before any is cleared (fewer rewrites)."""

    def __post_init__(self) -> None:
        if self.after_turns is None and self.after_seconds is None:
            raise ConfigError("MicroCompaction needs after_turns or after_seconds")
        if self.after_turns is not None and self.after_turns < 1:
            raise ConfigError(f"after_turns must be >= 1, got {self.after_turns}")
        seconds = self.after_seconds
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise ConfigError(f"after_seconds must be positive, got {seconds}")
        if self.min_chars < 0:
            raise ConfigError(f"min_chars must be >= 0, got {self.min_chars}")


@final
class MicroCompactor:
    """Applies a `MicroCompaction` policy at the head of each iteration. Loop task only."""

    def __init__(self, loop: MicroLoop, policy: MicroCompaction) -> None:
        self._loop = loop
        self._policy = policy
        self._first_held: dict[str, float] = {}

    def _due(self, slot: ResultSlot, turns: int, now: float) -> bool:
        policy = self._policy
        seen_by = turns - slot.turn - 1  # responses after the one that made the call
        if policy.after_turns is not None and seen_by >= policy.after_turns:
            return True
        held = self._first_held.setdefault(slot.call.ref, now)
        return policy.after_seconds is not None and now - held >= policy.after_seconds

    async def apply(self) -> CompactBoundary | None:
        """Clear the due results if enough are due; the boundary event, or None.

        A checkpoint only when it clears (the full texts are saved on a worker thread).
        """
        loop = self._loop
        messages = loop.conversation.snapshot()
        turns = sum(m.role == "assistant" for m in messages)
        now = anyio.current_time()
        due = [
            slot
            for slot in result_slots(messages)
            if clearable(slot.result) and self._due(slot, turns, now)
        ]
        if not due or sum(len(s.result.text) for s in due) < self._policy.min_chars:
            return None
        why = self._why()
        saver = ResultSaver(loop.state.results_dir)
        new, cleared = await anyio.to_thread.run_sync(
            lambda: clear_results(messages, due, save=saver, why=why)
        )
        if not cleared:
            return None
        loop.conversation.replace(new, reason="micro_compaction", keep_report=True)
        return CompactBoundary(len(messages), len(new), reason="micro_compaction")

    def _why(self) -> str:
        policy = self._policy
        parts = []
        if policy.after_turns is not None:
            parts.append(f"seen by {policy.after_turns} responses")
        if policy.after_seconds is not None:
            parts.append(f"held {policy.after_seconds:g} s")
        return "micro-compaction: " + " or ".join(parts)
