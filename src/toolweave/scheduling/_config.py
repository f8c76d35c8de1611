"""ConcurrencyConfig: the switches and caps of parallel tool execution."""

from __future__ import annotations

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

    @property
    def batch_cap(self) -> int:
        """The effective per-dispatch cap."""
        return self.per_batch_max or self.max_concurrency
