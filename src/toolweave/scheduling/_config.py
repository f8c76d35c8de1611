"""ConcurrencyConfig: the switches and caps of parallel tool execution."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

from .._exceptions import ConfigError

__all__ = ["ConcurrencyConfig", "PolicyName"]

PolicyName: TypeAlias = Literal["all_or_nothing", "partition", "rwlock", "conflict"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyConfig:
    """How a Dispatcher may overlap tool calls.

    Raises:
        ConfigError: if a cap is out of range or the policy is unknown.
    """

    enabled: bool = True
    """Master switch. Off = a plain sequential loop: no task group, no threads."""
    max_concurrency: int = 10
    """Tools running at once across every dispatch sharing the Dispatcher (the host)."""
    per_batch_max: int | None = None
    """Tools running at once within one dispatch, so one batch cannot starve others.

    None = `max_concurrency`. Must lie in ``[1, max_concurrency]``.
    """
    policy: PolicyName = "conflict"
    """Which calls may overlap: ``all_or_nothing``, ``partition``, ``rwlock`` or ``conflict``."""
    streaming_overlap: bool = True
    """Start SAFE calls while the model's response is still streaming."""
    drain_timeout: float = 30.0
    """Seconds `Dispatcher.aclose` waits for running calls before cancelling them."""
    default_tool_timeout: float | None = 600.0
    """Ceiling, in seconds, on one call's whole runner (its lifecycle), so nothing hangs a run.

    A tool that declares a longer `timeout` gets that instead. At the ceiling the
    call is cancelled whatever its `interrupt` (a worker thread is abandoned) and
    answered with a synthetic timeout error. None = no ceiling (not recommended:
    a call that never returns then holds its batch forever).
    """
    max_abandoned_threads: int = 8
    """Abandoned worker threads (still running after their call timed out) the host
    tolerates; at this many, calls of sync tools run exclusive until some end."""

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ConfigError(
                f"max_concurrency must be >= 1, got {self.max_concurrency}"
            )
        if self.per_batch_max is not None and not (
            1 <= self.per_batch_max <= self.max_concurrency
        ):
            raise ConfigError(
                f"per_batch_max must lie in [1, max_concurrency={self.max_concurrency}],"
                f" got {self.per_batch_max}"
            )
        if self.policy not in get_args(PolicyName):
            raise ConfigError(
                f"unknown policy {self.policy!r}; expected one of {get_args(PolicyName)}"
            )
        if self.drain_timeout < 0:
            raise ConfigError("drain_timeout must be >= 0")
        ceiling = self.default_tool_timeout
        if ceiling is not None and not (ceiling > 0 and not math.isnan(ceiling)):
            raise ConfigError(
                f"default_tool_timeout must be positive or None, got {ceiling}"
            )
        if self.max_abandoned_threads < 0:
            raise ConfigError("max_abandoned_threads must be >= 0")

    def ceiling_for(self, declared: float | None) -> float | None:
        """The per-call ceiling for a tool that declares `declared` seconds (or None)."""
        ceiling = self.default_tool_timeout
        if ceiling is None or declared is None:
            return ceiling
        return max(ceiling, declared)

    @property
    def batch_cap(self) -> int:
        """The effective per-dispatch cap."""
        return self.per_batch_max or self.max_concurrency
