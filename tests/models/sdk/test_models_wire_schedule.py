"""Errors parsed from the real wire, scheduled to the exact second under trio's MockClock.

The SDK calls need a real clock (see conftest), so a module fixture collects the
mapped errors first on asyncio; the schedule then runs in virtual time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import pytest
import trio.testing
from models_loopback import JsonReply, LoopbackServer
from models_sdk_cases import ANTHROPIC, OPENAI_CHAT, Case

from toolweave import ModelError, OverloadedError, RateLimitedError
from toolweave.messages import Message, ModelResponse, Text
from toolweave.models import ModelRequest, RetryingModel, RetryPolicy, ScriptedModel

HELLO = ModelRequest([Message("user", "hi")])


@pytest.fixture
def anyio_backend() -> object:
    """trio with an autojumping MockClock: the waits below are virtual and exact."""
    return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})


async def _error_from(
    case: Case, server: LoopbackServer, reply: JsonReply
) -> ModelError:
    server.script(reply)
    async with case.open(server) as model:
        try:
            await model.complete(HELLO)
        except ModelError as error:
            return error
    raise AssertionError("the scripted fault did not raise")


@pytest.fixture(scope="module")
def wire_errors() -> list[ModelError]:
    """A 429 with delta-seconds (Anthropic) and a 503 with a far HTTP-date (OpenAI)."""
    far = format_datetime(datetime.now(UTC) + timedelta(hours=2), usegmt=True)

    async def collect() -> list[ModelError]:
        with LoopbackServer() as server:
            return [
                await _error_from(
                    ANTHROPIC,
                    server,
                    JsonReply(
                        429,
                        ANTHROPIC.error_body("rate_limit_error", "slow"),
                        {"retry-after": "7"},
                    ),
                ),
                await _error_from(
                    OPENAI_CHAT,
                    server,
                    JsonReply(
                        503,
                        OPENAI_CHAT.error_body("server_error", "busy"),
                        {"retry-after": far},
                    ),
                ),
            ]

    return anyio.run(collect, backend="asyncio")


@pytest.mark.anyio
async def test_wire_retry_after_schedule_is_exact(
    wire_errors: list[ModelError],
) -> None:
    rate_limited, overloaded = wire_errors
    assert isinstance(rate_limited, RateLimitedError)
    assert rate_limited.retry_after == 7.0
    assert isinstance(overloaded, OverloadedError)
    assert overloaded.retry_after is not None
    assert overloaded.retry_after > 7000  # two hours ahead, less the time it took

    starts: list[float] = []

    def answer(request: ModelRequest) -> ModelResponse:
        starts.append(anyio.current_time())
        return ModelResponse([Text("ok")])

    script = ScriptedModel([rate_limited, overloaded, answer])
    policy = RetryPolicy(max_attempts=3)  # default clamp: 60 s
    start = anyio.current_time()
    response = await RetryingModel(script, policy=policy).complete(HELLO)
    assert response.text == "ok"
    assert [t - start for t in starts] == [67.0]  # 7 s as asked, then 60 s (clamped)
    assert anyio.current_time() - start == 67.0


def test_the_fixture_ran_on_real_sockets(wire_errors: list[ModelError]) -> None:
    causes: list[Any] = [
        type(e.__cause__).__module__.split(".")[0] for e in wire_errors
    ]
    assert causes == ["anthropic", "openai"]
