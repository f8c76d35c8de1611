"""RetryingModel: the one gateway for retries, Retry-After, backoff and model fallback.

the server's Retry-After first, clamped so a hostile header cannot
park a worker; exponential backoff with jitter otherwise; switch to the next
model after N *consecutive* overload/rate-limit/server (5xx) failures, or when
the same-model retry budget is spent, resetting the count on any other outcome
(a connection failure, a success). 5xx are treated like 529: a server
failing on its side is a reason to try another model, as overload is.
It is itself a `Model`, so plain (`complete`) and streaming calls share it.
"""

from __future__ import annotations

import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import final

import anyio

from .._exceptions import (
    ConfigError,
    ModelError,
    ModelServerError,
    OverloadedError,
    RateLimitedError,
)
from ..events import Retry
from ._base import Model, ModelRequest, StreamChunk, StreamEnd, StreamRestart

__all__ = ["RetryInfo", "RetryPolicy", "RetryStatistics", "RetryingModel"]

_ACTIVATING = (RateLimitedError, OverloadedError, ModelServerError)
"""Failures that count toward the fallback threshold (429, 529/503, other 5xx)."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a `RetryingModel` waits and when it gives up or falls back.

    The wait before retry ``n`` (1-based, counted per model) is the server's
    Retry-After when it sent one, clamped to `max_retry_after`; otherwise
    ``min(initial_delay * multiplier ** (n - 1), max_delay)``, reduced by a
    random fraction of at most `jitter`. Switching to a fallback model is
    immediate.
    """

    _: KW_ONLY
    max_attempts: int = 3
    """Attempts per model, the first included (1 = never retry the same model)."""
    initial_delay: float = 1.0
    """Seconds before the first retry when the server gave no Retry-After."""
    multiplier: float = 2.0
    """Growth of the backoff per retry."""
    max_delay: float = 30.0
    """Cap on the computed backoff."""
    jitter: float = 0.25
    """Largest fraction of the backoff removed at random (0 = exact backoff)."""
    max_retry_after: float = 60.0
    """Cap on a server's Retry-After."""
    fallback_after: int = 1
    """Consecutive overload, rate-limit or server (5xx) failures before switching model."""
    seed: int | None = None
    """Seeds the jitter, for reproducible schedules in tests."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.fallback_after < 1:
            raise ConfigError("max_attempts and fallback_after must be at least 1")
        if min(self.initial_delay, self.max_delay, self.max_retry_after) < 0:
            raise ConfigError("delays must not be negative")
        if not 0.0 <= self.jitter <= 1.0 or self.multiplier < 1.0:
            raise ConfigError("jitter must be within [0, 1] and multiplier at least 1")

    def delay(self, error: ModelError, retry: int, rng: random.Random) -> float:
        """Seconds to wait before same-model retry number `retry` (1-based) after `error`."""
        hint = getattr(error, "retry_after", None)
        if isinstance(hint, int | float):
            return min(float(hint), self.max_retry_after)
        backoff = min(
            self.initial_delay * self.multiplier ** (retry - 1), self.max_delay
        )
        return backoff * (1.0 - self.jitter * rng.random())


@dataclass(frozen=True, slots=True)
class RetryInfo:
    """What `on_retry` is told before the next attempt starts."""

    attempt: int
    """The 1-based number of the attempt that failed (counted across models)."""
    error: ModelError
    """Why it failed."""
    delay: float
    """Seconds until the next attempt."""
    _: KW_ONLY
    model: str
    """The model that failed."""
    next_model: str
    """The model of the next attempt."""
    fallback: bool
    """Whether the next attempt switches model."""
    discarded_chunks: int
    """Chunks of the failed attempt already delivered (now void)."""

    def to_event(self) -> Retry:
        """The `toolweave.events.Retry` event for this retry (call inside an event loop)."""
        return Retry(self.attempt, self.delay, str(self.error), model=self.next_model)


@dataclass(frozen=True, slots=True)
class RetryStatistics:
    """Counters of a `RetryingModel` since it was made."""

    calls: int
    """Streams started."""
    retries: int
    """Attempts that failed and were retried."""
    fallbacks: int
    """Switches to a fallback model."""


@dataclass(slots=True)
class _Run:
    """The state of one call's attempts: the gateway's local counters."""

    index: int = 0
    attempt: int = 0
    on_model: int = 0
    consecutive: int = 0


@final
class RetryingModel(Model):
    """A model that retries and falls back; itself a `Model`.

    Only retryable errors (rate limited, overloaded, connection, server) are
    retried; others raise at once. When the budget is spent on the last model,
    its error is raised. Every wait is `anyio.sleep` (exact under trio's
    MockClock) and is cancellable.

    A stream that dies after delivering chunks is retried as a new attempt.
    The consumer sees the boundary twice, both before the new attempt's
    first chunk: `on_retry` is called (synchronously, from the consuming task),
    then a `StreamRestart` chunk is yielded. Everything before the
    `StreamRestart` is void; a `ChunkAggregator` resets itself on it, and a
    loop discards tools it started eagerly from those chunks. `on_retry` is
    also called for failures before any chunk (with ``discarded_chunks=0``,
    and no `StreamRestart` follows).

    Args:
        primary: The model to ask first.
        fallbacks: Models to switch to, in order.
        policy: Backoff, clamps, budgets and the fallback threshold.
        on_retry: Called with a `RetryInfo` before each retry, from the task
            consuming the stream; an exception it raises ends the call.
    """

    def __init__(
        self,
        primary: Model,
        *,
        fallbacks: Sequence[Model] = (),
        policy: RetryPolicy | None = None,
        on_retry: Callable[[RetryInfo], None] | None = None,
    ) -> None:
        self._models = (primary, *fallbacks)
        self._policy = policy or RetryPolicy()
        self._on_retry = on_retry
        self._rng: random.Random | None = None  # made on the first retry, see _jitter
        self._calls = self._retries = self._fallbacks = 0

    def _jitter(self) -> random.Random:
        """The backoff's random source, seeded by the policy, made on first use.

        A run makes one RetryingModel and most never retry; seeding a Random
        from the OS costs more than the rest of a short run's model call. The
        sequence is the same as if it were made up front.
        """
        if self._rng is None:
            self._rng = random.Random(self._policy.seed)
        return self._rng

    @property
    def name(self) -> str:
        """The primary model's name."""
        return self._models[0].name

    @property
    def context_window(self) -> int | None:
        """The smallest known window of the models (a fallback must fit the prompt too)."""
        windows = [w for m in self._models if (w := m.context_window) is not None]
        return min(windows) if windows else None

    @property
    def models(self) -> tuple[Model, ...]:
        """The primary, then the fallbacks."""
        return self._models

    def statistics(self) -> RetryStatistics:
        """Counters since the model was made."""
        return RetryStatistics(self._calls, self._retries, self._fallbacks)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream from the first model that answers, retrying per the policy."""
        self._calls += 1
        run = _Run()
        while True:
            model = self._models[run.index]
            run.attempt += 1
            run.on_model += 1
            delivered = 0
            failure: ModelError | None = None
            chunks = model.stream(request)
            try:
                async for chunk in chunks:
                    delivered += 1
                    if isinstance(chunk, StreamEnd) and chunk.model is None:
                        chunk = replace(chunk, model=model.name)
                    yield chunk
            except ModelError as error:
                failure = error
            finally:
                if isinstance(chunks, AsyncGenerator):
                    with anyio.CancelScope(shield=True):
                        await chunks.aclose()
            if failure is None:
                return
            info = self._next(run, model, failure, delivered)
            if delivered:
                yield StreamRestart(
                    info.attempt, model=info.next_model, error=str(failure)
                )
            if info.delay > 0:
                await anyio.sleep(info.delay)

    def _next(
        self, run: _Run, model: Model, failure: ModelError, delivered: int
    ) -> RetryInfo:
        """Decide the next attempt (or re-raise `failure`) and tell `on_retry`."""
        if not failure.retryable:
            raise failure
        policy = self._policy
        activating = isinstance(failure, _ACTIVATING)
        run.consecutive = run.consecutive + 1 if activating else 0
        spent = run.on_model >= policy.max_attempts
        has_next = run.index + 1 < len(self._models)
        switch = has_next and (
            spent or (activating and run.consecutive >= policy.fallback_after)
        )
        if spent and not switch:
            raise failure
        if switch:
            run.index, run.on_model, run.consecutive = run.index + 1, 0, 0
            self._fallbacks += 1
            delay = 0.0
        else:
            delay = policy.delay(failure, run.on_model, self._jitter())
        self._retries += 1
        info = RetryInfo(
            run.attempt,
            failure,
            delay,
            model=model.name,
            next_model=self._models[run.index].name,
            fallback=switch,
            discarded_chunks=delivered,
        )
        if self._on_retry is not None:
            self._on_retry(info)
        return info

    async def aclose(self) -> None:
        """Close every model, primary first."""
        for model in self._models:
            await model.aclose()
