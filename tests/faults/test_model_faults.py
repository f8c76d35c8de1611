"""Fault table: what a provider model does with an answer that is not its API's (issue 24, item 7).

Each row is a bad answer served by a real loopback HTTP server to the official
SDK, for all three providers, streamed (a request with tools, while streaming
with tools is unproven: the case a false refusal was learned from) and whole.
Each row says what the user gets (the error class, whether it is retried, what
its message names) and checks that nothing is learned from it: no warning,
and the next request is still streamed. The genuine refusals at the end are
the only answers a model learns from, once, with one warning.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import (
    FIXTURES,
    JsonReply,
    LoopbackServer,
    RawReply,
    Reply,
    SseReply,
    fixture,
)
from models_sdk_cases import CASE_IDS, CASES, Case

import toolweave as tw
from toolweave import (
    BadRequestError,
    ModelConnectionError,
    ModelError,
    ModelServerError,
    UnexpectedResponseError,
)
from toolweave.events import Warning as WarningEvent
from toolweave.messages import Message
from toolweave.models import Model, ModelRequest, ToolDefinition

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

TOOLS = tuple(
    ToolDefinition(name, f"The {name} tool", {"type": "object", "properties": {}})
    for name in ("read", "grep", "glob")
)
WITH_TOOLS = ModelRequest([Message("user", "look around")], tools=TOOLS)
PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>Sign in to the proxy</title></head>"
    b"<body><form>user: <input name=u></form></body></html>"
)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Both backends on the real clock: the SDKs make real socket calls."""
    return request.param


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, f"unscripted requests: {loopback.unexpected}"
    assert not loopback.errors, f"the loopback server failed: {loopback.errors}"


@pytest.fixture(params=CASES, ids=CASE_IDS)
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


def whole(case: Case, name: str = "tools") -> JsonReply:
    """The provider's whole (non-streamed) response `fixtures/<provider>/<name>.json`."""
    text = (FIXTURES / case.fixtures / f"{name}.json").read_text()
    return JsonReply(200, json.loads(text))


@dataclass(frozen=True)
class Row:
    """One bad answer and what the user must get for it."""

    reply: Reply
    error: type[ModelError]
    retryable: bool
    says: tuple[str, ...]
    """Words the message must hold (the URL is always checked)."""
    stream: bool | None = None
    """Only in this mode (None: both)."""
    names_url: bool = True
    """The message names the URL (not for the provider's own JSON error object)."""


ROWS = {
    "html-200": Row(
        RawReply(200, PAGE),
        UnexpectedResponseError,
        False,
        ("an HTML page titled 'Sign in to the proxy' (text/html)", "base_url"),
    ),
    "text-plain-200": Row(
        RawReply(200, b"upstream is down, try later\n", "text/plain"),
        UnexpectedResponseError,
        False,
        ("plain text (text/plain)", "upstream is down"),
    ),
    "json-list-200": Row(
        RawReply(200, b"[1, 2, 3]", "application/json"),
        UnexpectedResponseError,
        False,
        ("a JSON list (application/json)",),
    ),
    "json-error-200": Row(
        RawReply(200, b'{"error": {"message": "no route"}}', "application/json"),
        UnexpectedResponseError,
        False,
        ("a JSON error object", "no route"),
    ),
    "json-other-object-200": Row(
        RawReply(200, b'{"status": "ok", "version": 3}', "application/json"),
        UnexpectedResponseError,
        False,
        ("a JSON object without a",),
    ),
    "empty-json-200": Row(
        RawReply(200, b"", "application/json"),
        UnexpectedResponseError,
        False,
        ("an empty body (application/json)",),
    ),
    "empty-no-type-200": Row(
        RawReply(200, b"", None),
        UnexpectedResponseError,
        False,
        ("an empty body (no content type)",),
    ),
    "html-502-proxy-page": Row(
        RawReply(502, b"<html><head><title>502 Bad Gateway</title></head></html>"),
        ModelServerError,
        True,
        ("an HTML page titled '502 Bad Gateway'",),
    ),
    "html-404-proxy-page": Row(
        RawReply(404, b"<html><body><h1>Not Found</h1></body></html>"),
        BadRequestError,
        False,
        ("an HTML page (text/html)",),
    ),
    "upstream-502-json": Row(
        JsonReply(
            502, {"error": {"type": "api_error", "message": "upstream connect error"}}
        ),
        ModelServerError,
        True,
        ("upstream connect error",),
        names_url=False,
    ),
    "event-stream-to-whole-request": Row(
        SseReply('data: {"x": 1}\n\n'),
        UnexpectedResponseError,
        False,
        ("an event stream (text/event-stream)",),
        stream=False,
    ),
    "sse-garbage-first-event": Row(
        SseReply("event: message_start\ndata: <html>oops</html>\n\n"),
        ModelServerError,
        True,
        ("not JSON", "<html>oops"),
        stream=True,
    ),
}


def _stream_rows() -> list[Any]:
    return [
        pytest.param(name, id=name) for name, r in ROWS.items() if r.stream is not False
    ]


def _whole_rows() -> list[Any]:
    return [
        pytest.param(name, id=name) for name, r in ROWS.items() if r.stream is not True
    ]


async def _fails(model: Model, row: Row, url: str) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await model.complete(WITH_TOOLS)
    error = caught.value
    assert type(error) is row.error, error
    assert error.retryable is row.retryable
    text = str(error)
    if row.names_url:
        assert url in text, text  # names where the answer came from
    for words in row.says:
        assert words in text, text
    assert "'str' object" not in text and "AttributeError" not in text
    return error


@pytest.mark.parametrize("name", _stream_rows())
async def test_a_bad_answer_to_a_streamed_request_is_named_and_teaches_nothing(
    case: Case, server: LoopbackServer, name: str
) -> None:
    row = ROWS[name]
    warnings: list[WarningEvent] = []
    server.script(row.reply, fixture(case.fixtures, "tools"))
    async with case.open(server, on_warning=warnings.append) as model:
        await _fails(model, row, server.url + case.path)
        assert model.capabilities.streams_with_tools  # type: ignore[attr-defined]
        again = await model.complete(WITH_TOOLS)  # still streamed
    assert [c.name for c in again.tool_calls] == ["read", "grep", "glob"]
    assert [r.body.get("stream") for r in server.requests] == [True, True]
    assert warnings == []


@pytest.mark.parametrize("name", _whole_rows())
async def test_a_bad_answer_to_a_whole_request_is_named(
    case: Case, server: LoopbackServer, name: str
) -> None:
    row = ROWS[name]
    warnings: list[WarningEvent] = []
    server.script(row.reply)
    async with case.open(server, stream=False, on_warning=warnings.append) as model:
        await _fails(model, row, server.url + case.path)
    assert len(server.requests) == 1 and warnings == []


async def test_a_stream_cut_mid_way_is_a_connection_error_and_teaches_nothing(
    case: Case, server: LoopbackServer
) -> None:
    cut = SseReply(fixture(case.fixtures, "tools").raw, cut_after_events=2)
    server.script(cut, fixture(case.fixtures, "tools"))
    warnings: list[WarningEvent] = []
    async with case.open(server, on_warning=warnings.append) as model:
        with pytest.raises(ModelConnectionError) as caught:
            await model.complete(WITH_TOOLS)
        assert caught.value.retryable
        await model.complete(WITH_TOOLS)
    assert [r.body.get("stream") for r in server.requests] == [True, True]
    assert warnings == []


async def test_a_malformed_event_names_the_url(
    case: Case, server: LoopbackServer
) -> None:
    # Anthropic's SDK skips unnamed events, and its mapper events without a type
    data = (
        '{"type": "message_start", "message": 5}' if case.id == "anthropic" else "[1]"
    )
    server.script(SseReply(f"event: message_start\ndata: {data}\n\n"))
    async with case.open(server) as model:
        with pytest.raises(ModelServerError) as caught:
            await model.complete(WITH_TOOLS)
    assert caught.value.retryable
    assert f"{server.url}{case.path}" in str(caught.value)


# -- the genuine refusals: learned once, warned once ---------------------------------

REFUSALS = ["error-naming-streaming", "empty-event-stream"]


def refusal(case: Case, name: str) -> Reply:
    """A genuine refusal to stream with tools, in the provider's own words."""
    if name == "empty-event-stream":
        return SseReply("")  # llama-cpp-python 0.3's way: 200, then no event
    message = "Automatic streaming tool choice is not supported"
    return JsonReply(500, case.error_body("api_error", message))


@pytest.mark.parametrize("name", REFUSALS)
async def test_a_genuine_refusal_is_learned_once_and_warned_once(
    case: Case, server: LoopbackServer, name: str
) -> None:
    warnings: list[WarningEvent] = []
    server.script(refusal(case, name), whole(case), whole(case))
    async with case.open(server, on_warning=warnings.append) as model:
        first = await model.complete(WITH_TOOLS)
        await model.complete(WITH_TOOLS)
        assert not model.capabilities.streams_with_tools  # type: ignore[attr-defined]
    assert len(first.tool_calls) == 3
    assert [r.body.get("stream") is True for r in server.requests] == [
        True,
        False,
        False,
    ]
    assert len(warnings) == 1 and "refused to stream" in warnings[0].message


async def test_a_whole_answer_to_a_streamed_request_is_learned_once(
    case: Case, server: LoopbackServer
) -> None:
    """A server that ignores ``stream: true`` and answers whole: it does not stream."""
    warnings: list[WarningEvent] = []
    server.script(whole(case), whole(case), whole(case))
    async with case.open(server, on_warning=warnings.append) as model:
        first = await model.complete(WITH_TOOLS)
        await model.complete(WITH_TOOLS)
    assert len(first.tool_calls) == 3
    assert [r.body.get("stream") is True for r in server.requests] == [
        True,
        False,
        False,
    ]
    assert len(warnings) == 1 and "whole response" in warnings[0].message


@pytest.mark.parametrize("name", REFUSALS)
async def test_a_refusal_not_confirmed_by_the_whole_request_is_not_learned(
    case: Case, server: LoopbackServer, name: str
) -> None:
    """The whole request fails too: the server is broken, not refusing; nothing learned."""
    server.script(
        refusal(case, name), RawReply(200, PAGE), fixture(case.fixtures, "tools")
    )
    warnings: list[WarningEvent] = []
    async with case.open(server, on_warning=warnings.append) as model:
        with pytest.raises(UnexpectedResponseError):
            await model.complete(WITH_TOOLS)
        assert model.capabilities.streams_with_tools  # type: ignore[attr-defined]
        await model.complete(WITH_TOOLS)
    assert [r.body.get("stream") is True for r in server.requests] == [
        True,
        False,
        True,
    ]
    assert warnings == []


async def test_an_agent_run_names_the_page_and_the_next_run_still_streams(
    server: LoopbackServer,
) -> None:
    """The issue's case end to end: a proxy's HTML 200, then the server is back."""

    @tw.tool
    async def read() -> str:
        """Read."""
        return "read"

    case = CASES[1]  # Chat Completions, where the issue was seen
    server.script(
        RawReply(200, PAGE),
        fixture(case.fixtures, "text"),
    )
    warnings: list[WarningEvent] = []
    async with case.open(server, on_warning=warnings.append) as model:
        agent = tw.Agent(model, [read])
        first = await agent.run("go")
        second = await agent.run("go")
    assert first.completion_reason is tw.CompletionReason.ERROR
    assert "an HTML page titled 'Sign in to the proxy'" in first.detail
    assert f"{server.url}{case.path}" in first.detail
    assert second.completion_reason is tw.CompletionReason.COMPLETED
    # not retried (a 200 page is no server fault), and the next run streamed
    assert [r.body.get("stream") for r in server.requests] == [True, True]
    assert warnings == []
