"""ExecutionConfig: the knobs of one call's lifecycle (timeouts and result budgets)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._exceptions import ConfigError

__all__ = ["ExecutionConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionConfig:
    """Timeouts and result-size budgets applied by `ToolRunner`.

    Raises:
        ConfigError: if a timeout or a size is not positive.
    """

    default_timeout: float | None = 120.0
    """Seconds a call may run when its tool sets no `timeout`; None = no limit."""
    max_result_chars: int = 50_000
    """Global cap of the per-tool persistence threshold (as in Claude Code)."""
    batch_result_chars: int = 200_000
    """Aggregate budget of one batch's results, enforced by `finish_batch` (§4.6.2)."""
    preview_chars: int = 2_000
    """Size of the preview the model sees in place of a persisted result."""

    def __post_init__(self) -> None:
        timeout = self.default_timeout
        if timeout is not None and not (timeout > 0 and not math.isnan(timeout)):
            raise ConfigError(
                f"default_timeout must be positive or None, got {timeout}"
            )
        for name in ("max_result_chars", "batch_result_chars", "preview_chars"):
            value = getattr(self, name)
            if value < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        if self.preview_chars > self.max_result_chars:
            raise ConfigError(
                f"preview_chars ({self.preview_chars}) must not exceed"
                f" max_result_chars ({self.max_result_chars})"
            )
