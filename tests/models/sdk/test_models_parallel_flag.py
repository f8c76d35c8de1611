"""The request-side parallel-tool-calls flag: when it is sent, and the one-shot 400 recovery.

seed 001: the flag only says whether the model may answer with several calls;
seed 004: sending it to models that reject it caused 400-error loops.
"""

from __future__ import annotations

from typing import Any

import pytest
from models_loopback import JsonReply, LoopbackServer, fixture
from models_sdk_cases import CASE_IDS, CASES, Case

from toolweave import BadRequestError
from toolweave.events import Warning as WarningEvent
from toolweave.messages import Message
from toolweave.models import ModelRequest, ToolDefinition

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

READ = ToolDefinition("read", "Read a file", {"type": "object", "properties": {}})


def with_tools(**overrides: Any) -> ModelRequest:
    options: dict[str, Any] = {
        "tools": (READ,),
        "parallel_tool_calls": False,
    } | overrides
    return ModelRequest([Message("user", "read two files")], **options)


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


def rejection(case: Case) -> JsonReply:
    if case.id == "anthropic":
        message = (
            "tool_choice.disable_parallel_tool_use: Extra inputs are not permitted"
        )
        return JsonReply(400, case.error_body("invalid_request_error", message))
    body = {
        "error": {
            "message": (
                "Unsupported parameter: 'parallel_tool_calls' is not supported with this model."
            ),
            "type": "invalid_request_error",
            "param": "parallel_tool_calls",
            "code": "unsupported_parameter",
        }
    }
    return JsonReply(400, body)


async def test_a_rejected_flag_is_dropped_retried_once_and_remembered(
    case: Case, server: LoopbackServer
) -> None:
    warnings: list[WarningEvent] = []
    server.script(
        rejection(case), fixture(case.fixtures, "text"), fixture(case.fixtures, "text")
    )
    async with case.open(
        server, supports_parallel_tool_calls=True, on_warning=warnings.append
    ) as model:
        first = await model.complete(with_tools())
        second = await model.complete(with_tools())
    assert first.text == second.text == "Hello, world!"
    sent = [case.flag_on_wire(r.body) for r in server.requests]
    # Anthropic carries "disable parallel" (True); OpenAI carries "parallel" (False).
    assert sent == [case.id == "anthropic", None, None]
    assert len(warnings) == 1
    assert case.flag_name in warnings[0].message


async def test_a_second_rejection_is_raised_never_looped(
    case: Case, server: LoopbackServer
) -> None:
    warnings: list[WarningEvent] = []
    server.script(rejection(case), rejection(case))
    async with case.open(
        server, supports_parallel_tool_calls=True, on_warning=warnings.append
    ) as model:
        with pytest.raises(BadRequestError):
            await model.complete(with_tools())
    assert len(server.requests) == 2
    assert len(warnings) == 1


async def test_a_400_that_names_something_else_is_not_retried(
    case: Case, server: LoopbackServer
) -> None:
    server.script(
        JsonReply(
            400, case.error_body("invalid_request_error", "max_tokens: too large")
        )
    )
    async with case.open(server, supports_parallel_tool_calls=True) as model:
        with pytest.raises(BadRequestError):
            await model.complete(with_tools())
    assert len(server.requests) == 1


async def test_no_flag_without_tools(case: Case, server: LoopbackServer) -> None:
    server.script(fixture(case.fixtures, "text"))
    async with case.open(server, supports_parallel_tool_calls=True) as model:
        await model.complete(
            ModelRequest([Message("user", "hi")], parallel_tool_calls=False)
        )
    body = server.requests[0].body
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body


@pytest.mark.parametrize(
    ("case_id", "name", "options", "expected"),
    [
        ("openai_chat", "gpt-4.1", {}, False),
        ("openai_chat", "gpt-4o-mini", {}, False),
        ("openai_chat", "o1", {}, None),
        ("openai_chat", "o3-mini", {}, None),
        ("openai_chat", "gpt-4.1-lite", {}, None),
        ("openai_chat", "some-new-model", {}, None),
        ("openai_chat", "qwen2.5-coder", {"compatible": True}, None),
        (
            "openai_chat",
            "qwen2.5-coder",
            {"compatible": True, "supports_parallel_tool_calls": True},
            False,
        ),
        ("openai_chat", "gpt-4.1", {"supports_parallel_tool_calls": False}, None),
        ("openai_responses", "gpt-5", {}, False),
        ("openai_responses", "o1-preview", {}, None),
        ("anthropic", "claude-sonnet-4-6", {}, True),
        (
            "anthropic",
            "claude-sonnet-4-6",
            {"supports_parallel_tool_calls": False},
            None,
        ),
    ],
)
async def test_the_capability_table_decides_the_flag(
    server: LoopbackServer,
    case_id: str,
    name: str,
    options: dict[str, Any],
    expected: bool | None,
) -> None:
    case = next(c for c in CASES if c.id == case_id)
    server.script(fixture(case.fixtures, "text"))
    async with case.open(server, name, **options) as model:
        await model.complete(with_tools())
    assert case.flag_on_wire(server.requests[0].body) is expected


async def test_parallel_allowed_sends_the_permissive_value(
    case: Case, server: LoopbackServer
) -> None:
    """Anthropic's default already allows parallel calls, so nothing is sent there."""
    server.script(fixture(case.fixtures, "text"))
    async with case.open(server, supports_parallel_tool_calls=True) as model:
        await model.complete(with_tools(parallel_tool_calls=True))
    expected = None if case.id == "anthropic" else True
    assert case.flag_on_wire(server.requests[0].body) is expected
