"""The context-window guard: how close the next request is to the model's window.

Before every model call the loop asks the guard about the request it is
about to send (the `Conversation`'s estimate: the provider's own count of the
last request plus a script-aware estimate of what was added since). The
answer is graded, as in Claude Code's warning / auto-compact / blocking
thresholds:

- NONE: it fits comfortably; send it.
- WARN: past `context_warning_threshold` of the window: send it, and say so
  once (a `Warning` event) until the context shrinks below the line again.
- COMPACT: past `compaction_threshold`: compact first, then send.
- BLOCK: it does not leave `reserve` tokens for the answer inside the window.
  It is never sent: the loop shrinks the conversation (summary, then dropping
  old rounds, then clearing old tool results), and if it still does not fit
  the run ends as CONTEXT_WINDOW_EXCEEDED, saying how big the request is, how
  big the window, and what could not be dropped.

Without a known window (`Model.context_window` is None) every verdict is NONE:
the provider's prompt-too-long answer is then the only guard.
"""

from __future__ import annotations

import enum
from dataclasses import KW_ONLY, dataclass
from typing import final

__all__ = ["ContextGuard", "ContextLevel", "ContextVerdict"]

_RESERVE_SHARE = 4
"""The answer's room is at most a quarter of the window (a 4 k window with the
default 4,096 output tokens would otherwise block every request)."""


class ContextLevel(enum.IntEnum):
    """How full the next request leaves the window, in increasing severity."""

    NONE = 0
    """Fits comfortably."""
    WARN = 1
    """Past the warning threshold: sent, with a Warning."""
    COMPACT = 2
    """Past the compaction threshold: compacted first."""
    BLOCK = 3
    """Does not fit with room for the answer: never sent."""


@dataclass(frozen=True, slots=True)
class ContextVerdict:
    """The guard's judgement of one request."""

    level: ContextLevel
    """How full."""
    _: KW_ONLY
    tokens: int
    """The request's estimated tokens."""
    window: int | None
    """The model's context window (None = unknown)."""
    limit: int | None
    """The most tokens a request may hold: the window less the answer's reserve."""

    def describe(self) -> str:
        """``~12,345 of 16,000 tokens (77 %)`` or ``~12,345 tokens`` without a window."""
        if not self.window:
            return f"~{self.tokens:,} tokens"
        share = 100 * self.tokens / self.window
        return f"~{self.tokens:,} of {self.window:,} tokens ({share:.0f} %)"


@final
@dataclass(frozen=True, slots=True)
class ContextGuard:
    """Grades a request's estimated size against a window. Stateless; any task.

    `warn_share` and `compact_share` are shares of the window (None = that
    level is off); the BLOCK line is always on when the window is known.
    """

    window: int | None
    """The model's context window, or None."""
    _: KW_ONLY
    output_tokens: int
    """The request's ``max_tokens``: the room its answer needs."""
    warn_share: float | None = None
    """Share of the window that warns."""
    compact_share: float | None = None
    """Share of the window that compacts."""

    @property
    def reserve(self) -> int:
        """Tokens kept free for the answer: ``max_tokens``, at most a quarter of the window."""
        if not self.window:
            return 0
        return min(self.output_tokens, self.window // _RESERVE_SHARE)

    @property
    def limit(self) -> int | None:
        """The most tokens a request may hold (None = no window known)."""
        return None if not self.window else self.window - self.reserve

    def judge(self, tokens: int) -> ContextVerdict:
        """The level of a request of `tokens` estimated tokens."""
        window, limit = self.window, self.limit
        level = ContextLevel.NONE
        if window and limit is not None:
            if tokens > limit:
                level = ContextLevel.BLOCK
            elif (
                self.compact_share is not None and tokens >= window * self.compact_share
            ):
                level = ContextLevel.COMPACT
            elif self.warn_share is not None and tokens >= window * self.warn_share:
                level = ContextLevel.WARN
        return ContextVerdict(level, tokens=tokens, window=window, limit=limit)

    def fits(self, tokens: int) -> bool:
        """Whether a request of `tokens` may be sent."""
        limit = self.limit
        return limit is None or tokens <= limit
