"""Every fault, through each official SDK, mapped to the neutral error tree at one seam."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anthropic
import openai
import pytest
from models_loopback import JsonReply, LoopbackServer
from models_sdk_cases import CASE_IDS, CASES, Case

from toolweave import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    OverloadedError,
    PromptTooLongError,
    RateLimitedError,
)
from toolweave.messages import Message
from toolweave.models import ModelRequest

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

HELLO = ModelRequest([Message("user", "Say hello")])
SDK_ERRORS = (anthropic.APIError, openai.APIError)


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


async def fail_with(case: Case, server: LoopbackServer, reply: JsonReply) -> ModelError:
    server.script(reply)
    async with case.open(server) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(HELLO)
    error = caught.value
    assert isinstance(error.__cause__, SDK_ERRORS), "raised `from` the SDK exception"
    return error


def _in(seconds: int) -> str:
    return format_datetime(datetime.now(UTC) + timedelta(seconds=seconds), usegmt=True)


@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        pytest.param({"retry-after": "7"}, 7.0, 7.0, id="delta-seconds"),
        pytest.param({"retry-after": "30"}, 30.0, 30.0, id="delta-seconds-30"),
        pytest.param(
            {"retry-after-ms": "1500", "retry-after": "9"}, 1.5, 1.5, id="ms-first"
        ),
        # An HTTP-date has 1 s resolution and the wall clock moves: allow that much.
        pytest.param(
            {"retry-after": "<http-date in 30 s>"}, 28.0, 30.0, id="http-date"
        ),
        pytest.param({}, None, None, id="none"),
    ],
)
async def test_429_carries_retry_after_in_each_form(
    case: Case,
    server: LoopbackServer,
    headers: dict[str, str],
    low: float | None,
    high: float | None,
) -> None:
    if headers.get("retry-after") == "<http-date in 30 s>":
        headers = {"retry-after": _in(30)}  # made now: the wall clock matters
    body = case.error_body(
        "rate_limit_error", "Number of request tokens has exceeded your limit."
    )
    error = await fail_with(case, server, JsonReply(429, body, headers))
    assert isinstance(error, RateLimitedError)
    if low is None or high is None:
        assert error.retry_after is None
    else:
        assert error.retry_after is not None
        assert low <= error.retry_after <= high


@pytest.mark.parametrize(
    ("status", "kind", "message", "expected"),
    [
        pytest.param(529, "overloaded_error", "Overloaded", OverloadedError, id="529"),
        pytest.param(
            503, "api_error", "Service unavailable", OverloadedError, id="503"
        ),
        pytest.param(
            500, "api_error", "Internal server error", ModelServerError, id="500"
        ),
        pytest.param(502, "api_error", "Bad gateway", ModelServerError, id="502"),
        pytest.param(
            401,
            "authentication_error",
            "invalid x-api-key",
            AuthenticationError,
            id="401",
        ),
        pytest.param(
            403, "permission_error", "not allowed", AuthenticationError, id="403"
        ),
        pytest.param(
            400,
            "prompt_too_long",
            "prompt is too long: 210000 tokens > 200000 maximum",
            PromptTooLongError,
            id="prompt-too-long",
        ),
        pytest.param(
            413,
            "request_too_large",
            "Request exceeds the maximum size",
            PromptTooLongError,
            id="413",
        ),
        pytest.param(
            400,
            "invalid_request_error",
            "messages: field required",
            BadRequestError,
            id="400",
        ),
        pytest.param(
            404, "not_found_error", "model: no-such-model", BadRequestError, id="404"
        ),
        pytest.param(
            408, "timeout_error", "Request timeout", ModelConnectionError, id="408"
        ),
    ],
)
async def test_each_status_maps_to_its_neutral_error(
    case: Case,
    server: LoopbackServer,
    status: int,
    kind: str,
    message: str,
    expected: type[ModelError],
) -> None:
    error = await fail_with(
        case, server, JsonReply(status, case.error_body(kind, message))
    )
    assert type(error) is expected
    assert message in str(error)


async def test_529_keeps_its_retry_after(case: Case, server: LoopbackServer) -> None:
    body = case.error_body("overloaded_error", "Overloaded")
    error = await fail_with(case, server, JsonReply(529, body, {"retry-after": "12"}))
    assert isinstance(error, OverloadedError)
    assert error.retry_after == 12.0


async def test_a_refused_connection_is_a_connection_error(case: Case) -> None:
    with LoopbackServer() as gone:
        pass  # started and stopped: its port now refuses connections
    async with case.open(gone) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.complete(HELLO)
    assert caught.value.__cause__ is not None
