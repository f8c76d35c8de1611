"""The retry gateway: backoff, Retry-After and its clamp, fallback, restarts.

On trio (MockClock) the schedule is asserted to the exact second. On asyncio
the same scenarios run with every duration scaled down to milliseconds and
only outcomes and computed delays are asserted, never measured durations.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from toolweave import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    OverloadedError,
    PromptTooLongError,
    RateLimitedError,
)
from toolweave.events import Retry
from toolweave.messages import Message, ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import (
    ChunkAggregator,
    Model,
    ModelRequest,
    RetryInfo,
    RetryingModel,
    RetryPolicy,
    RetryStatistics,
    ScriptedModel,
    ScriptStep,
    StreamChunk,
    StreamEnd,
    StreamRestart,
    TextChunk,
    ToolUseReady,
)

pytestmark = pytest.mark.anyio

HELLO = ModelRequest([Message("user", "hi")])
OK = ModelResponse([Text("ok")], usage=Usage(1, 1))


def on_trio(anyio_backend: Any) -> bool:
    return not isinstance(anyio_backend, str)


@pytest.fixture
def unit(anyio_backend: Any) -> float:
    """One "second" of the scenario: real on trio's MockClock, a millisecond on asyncio."""
    return 1.0 if on_trio(anyio_backend) else 0.001


class Timed(Model):
    """Records the anyio time each attempt starts, then streams from `inner`."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.starts: list[float] = []

    @property
    def name(self) -> str:
        return self.inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self.starts.append(anyio.current_time())
        async for chunk in self.inner.stream(request):
            yield chunk


async def test_retry_after_first_clamped_then_backoff(
    anyio_backend: Any, unit: float
) -> None:
    script = ScriptedModel(
        [
            RateLimitedError("429", retry_after=7 * unit),
            OverloadedError("529", retry_after=3600 * unit),  # hostile: clamped to 60
            ModelServerError("500"),  # no hint: backoff 2 * 2 ** 2 = 8
            OK,
        ]
    )
    timed = Timed(script)
    infos: list[RetryInfo] = []
    policy = RetryPolicy(
        max_attempts=4, initial_delay=2 * unit, jitter=0.0, max_retry_after=60 * unit
    )
    model = RetryingModel(timed, policy=policy, on_retry=infos.append)
    start = anyio.current_time()
    response = await model.complete(HELLO)
    assert response.text == "ok"
    assert [i.delay for i in infos] == [7 * unit, 60 * unit, 8 * unit]
    assert [i.attempt for i in infos] == [1, 2, 3]
    if on_trio(anyio_backend):
        assert [t - start for t in timed.starts] == [0, 7, 67, 75]
    script.assert_complete()


async def test_exponential_backoff_is_capped(anyio_backend: Any, unit: float) -> None:
    script = ScriptedModel([ModelConnectionError("cut")] * 5 + [OK])
    timed = Timed(script)
    policy = RetryPolicy(
        max_attempts=6,
        initial_delay=1 * unit,
        multiplier=3,
        max_delay=10 * unit,
        jitter=0.0,
    )
    model = RetryingModel(timed, policy=policy)
    start = anyio.current_time()
    await model.complete(HELLO)
    if on_trio(anyio_backend):
        # waits 1, 3, 9, then capped at 10, 10
        assert [t - start for t in timed.starts] == [0, 1, 4, 13, 23, 33]
    assert len(timed.starts) == 6


async def test_jitter_is_seeded_and_bounded(anyio_backend: Any, unit: float) -> None:
    def run_delays(seed: int) -> list[float]:
        return [
            RetryPolicy(initial_delay=4.0, jitter=0.5, seed=seed).delay(
                ModelServerError("x"), retry, rng
            )
            for rng in [random.Random(seed)]
            for retry in (1, 2, 3)
        ]

    assert run_delays(7) == run_delays(7)
    assert run_delays(7) != run_delays(8)
    for delay, base in zip(run_delays(7), (4.0, 8.0, 16.0), strict=True):
        assert base * 0.5 <= delay <= base
    infos: list[RetryInfo] = []
    script = ScriptedModel([ModelServerError("x"), ModelServerError("x"), OK])
    policy = RetryPolicy(initial_delay=4 * unit, jitter=0.5, seed=7)
    await RetryingModel(script, policy=policy, on_retry=infos.append).complete(HELLO)
    rng = random.Random(7)
    expected = [
        4 * unit * (1 - 0.5 * rng.random()),
        8 * unit * (1 - 0.5 * rng.random()),
    ]
    assert [i.delay for i in infos] == expected


async def test_fallback_after_n_consecutive_overloads(
    anyio_backend: Any, unit: float
) -> None:
    primary = ScriptedModel(
        [OverloadedError("529"), RateLimitedError("429")], name="primary"
    )
    fallback = ScriptedModel([OK], name="fallback")
    infos: list[RetryInfo] = []
    policy = RetryPolicy(fallback_after=2, initial_delay=1 * unit, jitter=0.0)
    model = RetryingModel(
        primary, fallbacks=[fallback], policy=policy, on_retry=infos.append
    )
    start = anyio.current_time()
    response = await model.complete(HELLO)
    assert response.model == "fallback"
    assert [(i.model, i.next_model, i.fallback) for i in infos] == [
        ("primary", "primary", False),
        ("primary", "fallback", True),
    ]
    assert infos[1].delay == 0.0  # switching model does not wait
    if on_trio(anyio_backend):
        assert anyio.current_time() - start == 1
    primary.assert_complete()
    fallback.assert_complete()
    assert model.statistics() == RetryStatistics(calls=1, retries=2, fallbacks=1)


async def test_the_overload_count_resets_on_any_other_outcome(unit: float) -> None:
    primary = ScriptedModel(
        [
            OverloadedError("529"),
            ModelConnectionError("reset"),
            ModelServerError("500"),
            OK,
        ],
        name="primary",
    )
    fallback = ScriptedModel([], name="fallback")
    policy = RetryPolicy(
        fallback_after=2, max_attempts=5, initial_delay=unit, jitter=0.0
    )
    response = await RetryingModel(
        primary, fallbacks=[fallback], policy=policy
    ).complete(HELLO)
    assert response.model == "primary"  # never two overloads in a row
    primary.assert_complete()


@pytest.mark.parametrize(
    "failures",
    [
        [ModelServerError("500"), ModelServerError("502")],
        [ModelServerError("500"), OverloadedError("529")],
        [RateLimitedError("429"), ModelServerError("504")],
    ],
    ids=["500-502", "500-529", "429-504"],
)
async def test_server_errors_count_toward_the_fallback_like_overload(
    unit: float, failures: list[ModelError]
) -> None:
    """Seed 002 §10(b): 5xx counts like 529; two in a row reach fallback_after=2."""
    primary = ScriptedModel(failures, name="primary")
    fallback = ScriptedModel([OK], name="fallback")
    infos: list[RetryInfo] = []
    policy = RetryPolicy(
        fallback_after=2, max_attempts=5, initial_delay=unit, jitter=0.0
    )
    model = RetryingModel(
        primary, fallbacks=[fallback], policy=policy, on_retry=infos.append
    )
    response = await model.complete(HELLO)
    assert response.model == "fallback"
    assert [i.fallback for i in infos] == [False, True]
    primary.assert_complete()
    assert model.statistics() == RetryStatistics(calls=1, retries=2, fallbacks=1)


async def test_a_single_server_error_switches_at_the_default_threshold() -> None:
    primary = ScriptedModel([ModelServerError("500")], name="primary")
    fallback = ScriptedModel([OK], name="fallback")
    response = await RetryingModel(primary, fallbacks=[fallback]).complete(HELLO)
    assert response.model == "fallback"


async def test_default_threshold_switches_on_the_first_overload() -> None:
    primary = ScriptedModel([RateLimitedError("429", retry_after=30)], name="primary")
    fallback = ScriptedModel([OK], name="fallback")
    start = anyio.current_time()
    response = await RetryingModel(primary, fallbacks=[fallback]).complete(HELLO)
    assert response.model == "fallback"
    assert (
        anyio.current_time() - start < 1
    )  # the fallback does not honour the old Retry-After


async def test_a_spent_budget_switches_to_the_fallback(unit: float) -> None:
    # connection failures never count toward fallback_after: only the budget switches
    primary = ScriptedModel([ModelConnectionError("reset")] * 3, name="primary")
    fallback = ScriptedModel([OK], name="fallback")
    policy = RetryPolicy(max_attempts=3, initial_delay=unit, jitter=0.0)
    response = await RetryingModel(
        primary, fallbacks=[fallback], policy=policy
    ).complete(HELLO)
    assert response.model == "fallback"
    primary.assert_complete()


async def test_a_spent_budget_on_the_last_model_raises_its_error(unit: float) -> None:
    last = ModelConnectionError("still cut")
    script = ScriptedModel([ModelConnectionError("cut"), last])
    infos: list[RetryInfo] = []
    policy = RetryPolicy(max_attempts=2, initial_delay=unit)
    with pytest.raises(ModelConnectionError) as caught:
        await RetryingModel(script, policy=policy, on_retry=infos.append).complete(
            HELLO
        )
    assert caught.value is last
    assert len(infos) == 1


@pytest.mark.parametrize(
    "error",
    [
        BadRequestError("400"),
        AuthenticationError("401"),
        PromptTooLongError("too long"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_errors_a_retry_cannot_fix_raise_at_once(error: ModelError) -> None:
    primary = ScriptedModel([error], name="primary")
    fallback = ScriptedModel([], name="fallback")
    infos: list[RetryInfo] = []
    model = RetryingModel(primary, fallbacks=[fallback], on_retry=infos.append)
    with pytest.raises(type(error)):
        await model.complete(HELLO)
    assert infos == []
    assert fallback.requests == []


TOOLS_THEN_TEXT = ModelResponse(
    [
        Text("Reading."),
        ToolCall("c1", "read", {"path": "a"}),
        ToolCall("c2", "read", {"path": "b"}),
    ],
    StopReason.TOOL_USE,
)


async def test_a_stream_that_dies_is_retried_and_the_boundary_is_announced(
    unit: float,
) -> None:
    dying = ScriptStep(
        TOOLS_THEN_TEXT, fail_after_chunks=2, error=ModelConnectionError("cut")
    )
    script = ScriptedModel([dying, OK])
    log: list[object] = []
    model = RetryingModel(
        script,
        policy=RetryPolicy(initial_delay=unit, jitter=0.0),
        on_retry=lambda info: log.append(
            ("on_retry", info.discarded_chunks, info.attempt)
        ),
    )
    async for chunk in model.stream(HELLO):
        log.append(chunk)
    assert log == [
        TextChunk("Reading.", block=0),
        ToolUseReady(ToolCall("c1", "read", {"path": "a"}), block=1),
        ("on_retry", 2, 1),
        StreamRestart(1, model="scripted", error="cut"),
        TextChunk("ok", block=0),
        StreamEnd(StopReason.END_TURN, Usage(1, 1), model="scripted"),
    ]


async def test_complete_keeps_only_the_last_attempt(unit: float) -> None:
    """Plain and streaming calls share the gateway: `complete` drains the same stream."""
    dying = ScriptStep(
        TOOLS_THEN_TEXT, fail_after_chunks=3, error=ModelServerError("boom")
    )
    script = ScriptedModel([dying, OK])
    response = await RetryingModel(
        script, policy=RetryPolicy(initial_delay=unit)
    ).complete(HELLO)
    assert response.content == (Text("ok"),)
    assert response.tool_calls == ()


async def test_an_aggregator_mid_stream_never_raises_and_resets_on_restart(
    unit: float,
) -> None:
    dying = ScriptStep(
        TOOLS_THEN_TEXT, fail_after_chunks=2, error=ModelConnectionError("cut")
    )
    model = RetryingModel(
        ScriptedModel([dying, OK]), policy=RetryPolicy(initial_delay=unit)
    )
    aggregator = ChunkAggregator()
    snapshots = []
    async for chunk in model.stream(HELLO):
        aggregator.add(chunk)
        snapshots.append(aggregator.response())
    assert snapshots[1].tool_calls == (ToolCall("c1", "read", {"path": "a"}),)
    assert snapshots[2].content == ()  # after the StreamRestart
    assert snapshots[-1].text == "ok"


async def test_the_wait_is_cancellable(anyio_backend: Any, unit: float) -> None:
    script = ScriptedModel([RateLimitedError("429", retry_after=7 * unit), OK])
    model = RetryingModel(script)
    start = anyio.current_time()
    with anyio.move_on_after(5 * unit):
        await model.complete(HELLO)
    assert len(script.requests) == 1
    if on_trio(anyio_backend):
        assert anyio.current_time() - start == 5


async def test_retry_info_becomes_a_retry_event() -> None:
    infos: list[RetryInfo] = []
    script = ScriptedModel([ModelConnectionError("cut"), OK])
    await RetryingModel(
        script, policy=RetryPolicy(initial_delay=0.0), on_retry=infos.append
    ).complete(HELLO)
    event = infos[0].to_event()
    assert isinstance(event, Retry)
    assert (event.attempt, event.delay, event.error, event.model) == (
        1,
        0.0,
        "cut",
        "scripted",
    )


async def test_name_window_and_close_cover_every_model() -> None:
    closed: list[str] = []

    class Closing(Model):
        def __init__(self, name: str, window: int | None) -> None:
            self._n, self._w = name, window

        @property
        def name(self) -> str:
            return self._n

        @property
        def context_window(self) -> int | None:
            return self._w

        async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
            yield StreamEnd(StopReason.END_TURN)

        async def aclose(self) -> None:
            closed.append(self._n)

    model = RetryingModel(
        Closing("a", 200_000), fallbacks=[Closing("b", 128_000), Closing("c", None)]
    )
    assert model.name == "a"
    assert model.context_window == 128_000
    assert [m.name for m in model.models] == ["a", "b", "c"]
    await model.aclose()
    assert closed == ["a", "b", "c"]


@pytest.mark.parametrize(
    "options",
    [
        {"max_attempts": 0},
        {"fallback_after": 0},
        {"initial_delay": -1.0},
        {"jitter": 1.5},
        {"multiplier": 0.5},
    ],
)
def test_a_bad_policy_is_a_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(**options)
