"""`stream=` on the provider models, and the fallback when a server will not stream with tools.

A whole response is replayed through the stream mapper, so it must come out
exactly as its stream does. A server that refuses to stream a request with
tools (llama-cpp-python: HTTP 500 "Automatic streaming tool choice is not
supported") costs one failed request per model: the refusal is learned, warned
about once, and every later request with tools goes whole. Anything that is not
such a refusal is raised as it is.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from models_loopback import (
    FIXTURES,
    Hangup,
    JsonReply,
    LoopbackServer,
    SseReply,
    fixture,
)
from models_sdk_cases import CASE_IDS, CASES, Case

from toolweave import (
    AuthenticationError,
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    PromptTooLongError,
    RateLimitedError,
)
from toolweave.events import Warning as WarningEvent
from toolweave.messages import Message, ModelResponse
from toolweave.models import (
    Capabilities,
    ChunkAggregator,
    Model,
    ModelRequest,
    StreamChunk,
    ToolDefinition,
    ToolUseReady,
    forward_warnings,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

TOOLS = (
    ToolDefinition("read", "Read a file", {"type": "object", "properties": {}}),
    ToolDefinition("grep", "Search", {"type": "object", "properties": {}}),
    ToolDefinition("glob", "Find files", {"type": "object", "properties": {}}),
)
WITH_TOOLS = ModelRequest([Message("user", "look around")], tools=TOOLS)
NO_TOOLS = ModelRequest([Message("user", "Say hello")])
LLAMA_CPP_REFUSAL = "Automatic streaming tool choice is not supported"


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


def whole(case: Case, name: str) -> JsonReply:
    """The whole (non-streamed) response `fixtures/<provider>/<name>.json`."""
    return JsonReply(
        200, json.loads((FIXTURES / case.fixtures / f"{name}.json").read_text())
    )


def refusal(case: Case, status: int, message: str) -> JsonReply:
    kind = "invalid_request_error" if status < 500 else "api_error"
    return JsonReply(status, case.error_body(kind, message))


def streamed(body: dict[str, Any]) -> bool:
    """Whether a request body asked for a stream (and only then for stream options)."""
    if body.get("stream") is not True:
        assert "stream_options" not in body
        return False
    return True


async def chunks_of(model: Model, request: ModelRequest) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request)]


def same_response(a: ModelResponse, b: ModelResponse) -> None:
    assert a.content == b.content
    assert (a.stop_reason, a.raw_stop_reason, a.usage, a.model) == (
        b.stop_reason,
        b.raw_stop_reason,
        b.usage,
        b.model,
    )


@pytest.mark.parametrize("name", ["tools", "thinking"])
async def test_a_whole_response_maps_exactly_as_its_stream(
    case: Case, server: LoopbackServer, name: str
) -> None:
    server.script(fixture(case.fixtures, name), whole(case, name))
    async with case.open(server) as live:
        live_chunks = await chunks_of(live, WITH_TOOLS)
    async with case.open(server, stream=False) as sent_whole:
        whole_chunks = await chunks_of(sent_whole, WITH_TOOLS)
    assert [streamed(r.body) for r in server.requests] == [True, False]
    live_calls = [c for c in live_chunks if isinstance(c, ToolUseReady)]
    whole_calls = [c for c in whole_chunks if isinstance(c, ToolUseReady)]
    assert whole_calls == live_calls  # same calls, ids and block numbers
    assert (name == "tools") == bool(whole_calls)
    same_response(
        _aggregate(whole_chunks),
        _aggregate(live_chunks),
    )


def _aggregate(chunks: list[StreamChunk]) -> ModelResponse:
    aggregator = ChunkAggregator()
    for chunk in chunks:
        aggregator.add(chunk)
    return aggregator.response()


async def test_stream_false_sends_requests_without_tools_whole_too(
    case: Case, server: LoopbackServer
) -> None:
    server.script(whole(case, "thinking"))
    async with case.open(server, stream=False) as model:
        response = await model.complete(NO_TOOLS)
        assert model.capabilities == Capabilities(  # type: ignore[attr-defined]
            parallel_flag=model.sends_parallel_flag,  # type: ignore[attr-defined]
            streams_with_tools=False,
            streams_without_tools=False,
            streaming_with_tools_confirmed=False,
        )
    assert response.text == "Hi!"
    assert [streamed(r.body) for r in server.requests] == [False]


async def test_a_refusal_to_stream_with_tools_is_learned_once_and_warned_once(
    case: Case, server: LoopbackServer
) -> None:
    warnings: list[WarningEvent] = []
    server.script(
        refusal(case, 500, LLAMA_CPP_REFUSAL),
        whole(case, "tools"),
        whole(case, "tools"),
        fixture(case.fixtures, "text"),  # no tools: still streamed
    )
    async with case.open(server, on_warning=warnings.append) as model:
        first = await model.complete(WITH_TOOLS)
        second = await model.complete(WITH_TOOLS)
        plain = await model.complete(NO_TOOLS)
        learned = model.capabilities  # type: ignore[attr-defined]
    assert [c.name for c in first.tool_calls] == ["read", "grep", "glob"]
    assert first.content == second.content
    assert plain.text == "Hello, world!"
    assert [streamed(r.body) for r in server.requests] == [True, False, False, True]
    assert [bool(r.body.get("tools")) for r in server.requests] == [True] * 3 + [False]
    assert len(warnings) == 1
    assert LLAMA_CPP_REFUSAL in warnings[0].message
    assert "whole" in warnings[0].message
    assert learned.streams_with_tools is False
    assert learned.streams_without_tools is True
    assert learned.streaming_with_tools_confirmed is False


async def test_a_stream_ended_before_its_first_event_is_a_refusal(
    case: Case, server: LoopbackServer
) -> None:
    """llama-cpp-python 0.3's way: HTTP 200, then the stream ends with no event at all."""
    warnings: list[WarningEvent] = []
    server.script(SseReply(""), whole(case, "tools"), whole(case, "tools"))
    async with case.open(server, on_warning=warnings.append) as model:
        first = await model.complete(WITH_TOOLS)
        await model.complete(WITH_TOOLS)
    assert len(first.tool_calls) == 3
    assert [streamed(r.body) for r in server.requests] == [True, False, False]
    assert len(warnings) == 1 and "before sending anything" in warnings[0].message


async def test_after_an_empty_stream_a_dead_connection_gets_one_more_try(
    case: Case, server: LoopbackServer
) -> None:
    """Seen for real: the server closes the connection after its empty stream, the
    client pools it, and the whole request sent next meets a dead socket."""
    server.script(SseReply(""), Hangup(), whole(case, "tools"))
    async with case.open(server, on_warning=lambda event: None) as model:
        response = await model.complete(WITH_TOOLS)
    assert len(response.tool_calls) == 3
    assert [streamed(r.body) for r in server.requests] == [True, False, False]


async def test_the_extra_try_after_an_empty_stream_is_only_one(
    case: Case, server: LoopbackServer
) -> None:
    server.script(SseReply(""), Hangup(), Hangup())
    async with case.open(server, on_warning=lambda event: None) as model:
        with pytest.raises(ModelConnectionError):
            await model.complete(WITH_TOOLS)
    assert len(server.requests) == 3


async def test_a_dead_connection_without_a_refusal_is_raised_at_once(
    case: Case, server: LoopbackServer
) -> None:
    server.script(Hangup())
    async with case.open(server) as model:
        with pytest.raises(ModelConnectionError):
            await model.complete(WITH_TOOLS)
    assert len(server.requests) == 1


async def test_a_streamed_text_answer_does_not_prove_streaming_with_tools(
    case: Case, server: LoopbackServer
) -> None:
    """llama-cpp-python streams a text answer and refuses only once the model picks a tool."""
    server.script(fixture(case.fixtures, "text"), SseReply(""), whole(case, "tools"))
    async with case.open(server, on_warning=lambda event: None) as model:
        await model.complete(WITH_TOOLS)
        assert not model.capabilities.streaming_with_tools_confirmed  # type: ignore[attr-defined]
        response = await model.complete(WITH_TOOLS)
    assert len(response.tool_calls) == 3
    assert [streamed(r.body) for r in server.requests] == [True, True, False]


async def test_an_empty_stream_after_streaming_was_proven_is_a_connection_error(
    case: Case, server: LoopbackServer
) -> None:
    server.script(fixture(case.fixtures, "tools"), SseReply(""))
    async with case.open(server) as model:
        await model.complete(WITH_TOOLS)
        with pytest.raises(ModelConnectionError):
            await model.complete(WITH_TOOLS)
        assert model.capabilities.streams_with_tools  # type: ignore[attr-defined]
    assert len(server.requests) == 2


async def test_an_empty_stream_without_tools_is_a_connection_error(
    case: Case, server: LoopbackServer
) -> None:
    server.script(SseReply(""))
    async with case.open(server) as model:
        with pytest.raises(ModelConnectionError):
            await model.complete(NO_TOOLS)
    assert len(server.requests) == 1


# Each server words it its own way: a refusal is recognised by what it is (an
# HTTP 4xx/5xx bad-request or server error whose own message names streaming),
# not by one message.
REFUSALS = [
    pytest.param(500, LLAMA_CPP_REFUSAL, id="llama-cpp-python-500"),
    pytest.param(
        400, "'stream' is not supported together with 'tools'", id="400-stream"
    ),
    pytest.param(
        400, "Unrecognized request argument supplied: stream_options", id="400-opts"
    ),
    pytest.param(422, "Streaming tool calls not implemented", id="422"),
    pytest.param(501, "STREAMING with function calling is unsupported", id="501-caps"),
]


@pytest.mark.parametrize(("status", "message"), REFUSALS)
async def test_refusals_in_other_words_are_recognised(
    case: Case, server: LoopbackServer, status: int, message: str
) -> None:
    server.script(refusal(case, status, message), whole(case, "tools"))
    warnings: list[WarningEvent] = []
    async with case.open(server, on_warning=warnings.append) as model:
        response = await model.complete(WITH_TOOLS)
    assert len(response.tool_calls) == 3
    assert [streamed(r.body) for r in server.requests] == [True, False]
    assert len(warnings) == 1


# Not refusals: each is raised as the error it is, nothing is learned, the
# request is not sent again (retrying is the gateway's job, not the provider's).
NOT_REFUSALS = [
    pytest.param(
        500, "internal error in the sampler", ModelServerError, id="500-no-word"
    ),
    pytest.param(
        400, "tools[0].name must match a pattern", BadRequestError, id="400-other"
    ),
    pytest.param(429, "too many streams open, slow down", RateLimitedError, id="429"),
    pytest.param(401, "no key for streaming endpoint", AuthenticationError, id="401"),
    pytest.param(
        400,
        "prompt is too long to stream: maximum context",
        PromptTooLongError,
        id="too-long",
    ),
]


@pytest.mark.parametrize(("status", "message", "error"), NOT_REFUSALS)
async def test_other_errors_are_raised_and_teach_nothing(
    case: Case,
    server: LoopbackServer,
    status: int,
    message: str,
    error: type[ModelError],
) -> None:
    server.script(refusal(case, status, message))
    warnings: list[WarningEvent] = []
    async with case.open(server, on_warning=warnings.append) as model:
        with pytest.raises(error):
            await model.complete(WITH_TOOLS)
        assert model.capabilities.streams_with_tools is True  # type: ignore[attr-defined]
    assert len(server.requests) == 1
    assert warnings == []


async def test_a_refusal_without_tools_is_not_a_tools_refusal(
    case: Case, server: LoopbackServer
) -> None:
    """Only a streamed request *with tools* can teach the fallback (the issue's case)."""
    server.script(refusal(case, 500, "streaming is not supported"))
    async with case.open(server) as model:
        with pytest.raises(ModelServerError):
            await model.complete(NO_TOOLS)
        assert model.capabilities.streams_with_tools is True  # type: ignore[attr-defined]
    assert len(server.requests) == 1


async def test_once_streaming_with_tools_worked_a_later_stream_error_is_raised(
    case: Case, server: LoopbackServer
) -> None:
    server.script(
        fixture(case.fixtures, "tools"), refusal(case, 500, LLAMA_CPP_REFUSAL)
    )
    async with case.open(server) as model:
        await model.complete(WITH_TOOLS)
        assert model.capabilities.streaming_with_tools_confirmed  # type: ignore[attr-defined]
        with pytest.raises(ModelServerError):
            await model.complete(WITH_TOOLS)
        assert model.capabilities.streams_with_tools is True  # type: ignore[attr-defined]
    assert [streamed(r.body) for r in server.requests] == [True, True]


async def test_flag_rejection_and_stream_refusal_on_one_request(
    case: Case, server: LoopbackServer
) -> None:
    """Both downgrades are learned on the first request: three attempts, then none extra."""
    flag_rejection = refusal(
        case, 400, f"Unsupported parameter: '{case.flag_name}' is not supported"
    )
    server.script(
        flag_rejection,
        refusal(case, 500, LLAMA_CPP_REFUSAL),
        whole(case, "tools"),
        whole(case, "tools"),
    )
    warnings: list[WarningEvent] = []
    serial = ModelRequest(WITH_TOOLS.messages, tools=TOOLS, parallel_tool_calls=False)
    async with case.open(
        server, supports_parallel_tool_calls=True, on_warning=warnings.append
    ) as model:
        await model.complete(serial)
        await model.complete(serial)
        learned = model.capabilities  # type: ignore[attr-defined]
    flags = [case.flag_on_wire(r.body) is not None for r in server.requests]
    assert flags == [True, False, False, False]
    assert [streamed(r.body) for r in server.requests] == [True, True, False, False]
    assert len(warnings) == 2
    assert not learned.parallel_flag and not learned.streams_with_tools


async def test_a_second_refusal_of_a_whole_request_is_raised(
    case: Case, server: LoopbackServer
) -> None:
    """A server that refuses the whole request too: no loop, the error is raised."""
    server.script(
        refusal(case, 500, LLAMA_CPP_REFUSAL), refusal(case, 500, LLAMA_CPP_REFUSAL)
    )
    async with case.open(server, on_warning=lambda event: None) as model:
        with pytest.raises(ModelServerError):
            await model.complete(WITH_TOOLS)
    assert [streamed(r.body) for r in server.requests] == [True, False]


async def test_the_warning_reaches_the_run_sink_and_the_log(
    server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    case = CASES[1]  # one provider is enough: the path is shared
    server.script(
        refusal(case, 500, LLAMA_CPP_REFUSAL),
        whole(case, "tools"),
        refusal(case, 500, LLAMA_CPP_REFUSAL),
        whole(case, "tools"),
    )
    sunk: list[WarningEvent] = []
    with caplog.at_level(logging.WARNING, logger="toolweave.models"):
        async with case.open(server) as model:
            with forward_warnings(sunk.append):
                await model.complete(WITH_TOOLS)
        assert caplog.records == []  # the sink had it
        async with case.open(server) as fresh:  # nobody listening: logged
            await fresh.complete(WITH_TOOLS)
    assert len(sunk) == 1
    assert [r.getMessage() for r in caplog.records] == [sunk[0].message]
