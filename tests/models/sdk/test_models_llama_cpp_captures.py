"""What llama-cpp-python's server really sends, replayed through the openai SDK.

Every fixture in ``fixtures/llama_cpp/`` is a response body captured verbatim
from the real server (llama-cpp-python 0.3.36, SmolLM2-135M-Instruct,
``--chat_format chatml-function-calling``) by
``tests/integration/capture_llama_fixtures.py``; ``captures.json`` records each
request, status and content type. Quirks this server does not show on its own
are tested on a real capture with one field changed, named in each row.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from models_loopback import FIXTURES, JsonReply, LoopbackServer, SseReply
from models_sdk_cases import OPENAI_CHAT

from toolweave.events import Warning as WarningEvent
from toolweave.messages import Message, StopReason, ToolCall, ToolResult, Usage
from toolweave.models import (
    ModelRequest,
    StreamChunk,
    ToolDefinition,
    ToolUseReady,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

CAPTURED = FIXTURES / "llama_cpp"
INDEX = json.loads((CAPTURED / "captures.json").read_text())
TOOLS = tuple(
    ToolDefinition(
        t["function"]["name"], t["function"]["description"], t["function"]["parameters"]
    )
    for t in INDEX["files"]["tool_call.json"]["request"]["tools"]
)
ASK = ModelRequest([Message("user", "Use the add tool to add 2 and 3.")], tools=TOOLS)
FORCED = ModelRequest(ASK.messages, tools=TOOLS, tool_choice="add")
ADD = {"a": 2, "b": 3}


def captured_json(name: str) -> dict[str, Any]:
    return json.loads((CAPTURED / name).read_text())  # type: ignore[no-any-return]


def whole(
    name: str, change: Callable[[dict[str, Any]], None] | None = None
) -> JsonReply:
    body = copy.deepcopy(captured_json(name))
    if change is not None:
        change(body)
    return JsonReply(INDEX["files"][name]["status"], body)


def sse(name: str) -> SseReply:
    assert INDEX["files"][name]["content_type"].startswith("text/event-stream")
    return SseReply((CAPTURED / name).read_text())


def local(server: LoopbackServer, **options: Any) -> Any:
    return OPENAI_CHAT.open(server, "local", compatible=True, **options)


async def chunks_of(model: Any, request: ModelRequest) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request)]


def calls_in(chunks: list[StreamChunk]) -> list[ToolCall]:
    return [c.call for c in chunks if isinstance(c, ToolUseReady)]


async def test_a_whole_tool_call_is_one_call_despite_the_legacy_field_beside_it(
    server: LoopbackServer,
) -> None:
    """The server fills ``function_call`` (name "add:") beside ``tool_calls``: one call."""
    raw = captured_json("tool_call.json")["choices"][0]["message"]
    assert raw["function_call"]["name"] == "add:"  # what makes the quirk real
    assert raw["tool_calls"][0]["function"]["arguments"].startswith("{ ")
    server.script(whole("tool_call.json"))
    async with local(server, stream=False) as model:
        response = await model.complete(ASK)
    assert list(response.tool_calls) == [
        ToolCall(raw["tool_calls"][0]["id"], "add", ADD)
    ]
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(261, 14, requests=1)
    assert response.model == "local"


async def test_the_real_refusal_falls_back_to_whole_requests_once(
    server: LoopbackServer,
) -> None:
    """HTTP 200 and an empty event stream, then the same request sent whole."""
    assert (CAPTURED / "stream_refused.sse").read_bytes() == b""
    warnings: list[WarningEvent] = []
    server.script(
        sse("stream_refused.sse"), whole("tool_call.json"), whole("after_result.json")
    )
    async with local(server, on_warning=warnings.append) as model:
        first = await model.complete(ASK)
        second = await model.complete(ASK)
    assert [c.name for c in (*first.tool_calls, *second.tool_calls)] == ["add", "add"]
    assert [r.body.get("stream") for r in server.requests] == [True, None, None]
    assert len(warnings) == 1


async def test_a_streamed_forced_call_with_the_legacy_field_in_every_delta(
    server: LoopbackServer,
) -> None:
    """Every delta repeats the name and carries ``function_call`` too; no usage chunk."""
    server.script(sse("stream_forced_tool.sse"))
    async with local(server) as model:
        chunks = await chunks_of(model, FORCED)
        confirmed = model.capabilities.streaming_with_tools_confirmed
    (call,) = calls_in(chunks)
    assert (call.name, call.input, call.raw_arguments) == ("add", ADD, None)
    assert call.id.startswith("call__0_add_")
    end = chunks[-1]
    assert getattr(end, "stop_reason", None) is StopReason.TOOL_USE
    assert getattr(end, "usage", None) == Usage(requests=1)  # usage never sent
    assert confirmed  # a streamed tool call proves streaming with tools


@pytest.mark.parametrize(
    ("name", "streamed"), [("text.json", False), ("stream_text.sse", True)]
)
async def test_an_empty_text_answer_ends_the_turn(
    server: LoopbackServer, name: str, streamed: bool
) -> None:
    server.script(sse(name) if streamed else whole(name))
    async with local(server, stream=streamed) as model:
        response = await model.complete(ASK)
        confirmed = model.capabilities.streaming_with_tools_confirmed
    assert not response.content  # the server said "" and nothing else
    assert response.stop_reason is StopReason.END_TURN
    assert response.usage == (
        Usage(requests=1) if streamed else Usage(27, 9, requests=1)
    )
    assert not confirmed  # a streamed text answer proves nothing about tools


def _message(body: dict[str, Any]) -> dict[str, Any]:
    return body["choices"][0]["message"]  # type: ignore[no-any-return]


def _only_legacy(body: dict[str, Any]) -> None:
    del _message(body)["tool_calls"]


def _no_ids(body: dict[str, Any]) -> None:
    call = _message(body)["tool_calls"][0]
    del call["id"]
    _message(body)["tool_calls"].append(copy.deepcopy(call))


def _one_id_twice(body: dict[str, Any]) -> None:
    calls = _message(body)["tool_calls"]
    calls.append(copy.deepcopy(calls[0]))


def _stop(body: dict[str, Any]) -> None:
    body["choices"][0]["finish_reason"] = "stop"


def _no_usage(body: dict[str, Any]) -> None:
    del body["usage"]


def _name(new: str) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        _message(body)["tool_calls"][0]["function"]["name"] = new

    return change


def _spaced_arguments(body: dict[str, Any]) -> None:
    function = _message(body)["tool_calls"][0]["function"]
    function["arguments"] = "\n  " + function["arguments"] + " \n"


CHAT_ID = captured_json("tool_call.json")["id"]
CALL_ID = _message(captured_json("tool_call.json"))["tool_calls"][0]["id"]

# (what changed in the real capture, the change, the calls expected, stop reason)
VARIANTS = [
    ("as captured", None, [(CALL_ID, "add")], StopReason.TOOL_USE),
    (
        "only the legacy field (name 'add:')",
        _only_legacy,
        [(f"call_{CHAT_ID}_0", "add")],
        StopReason.TOOL_USE,
    ),
    (
        "ids missing",
        _no_ids,
        [(f"call_{CHAT_ID}_0", "add"), (f"call_{CHAT_ID}_1", "add")],
        StopReason.TOOL_USE,
    ),
    (
        "one id on two calls",
        _one_id_twice,
        # kept as sent: the loop keys calls by position, the converters repair the wire
        [(CALL_ID, "add"), (CALL_ID, "add")],
        StopReason.TOOL_USE,
    ),
    ("finish_reason stop", _stop, [(CALL_ID, "add")], StopReason.TOOL_USE),
    ("usage missing", _no_usage, [(CALL_ID, "add")], StopReason.TOOL_USE),
    (
        "name with stray whitespace",
        _name(" add\n"),
        [(CALL_ID, "add")],
        StopReason.TOOL_USE,
    ),
    (
        "name with a special token",
        _name("add<|im_end|>"),
        [(CALL_ID, "add")],
        StopReason.TOOL_USE,
    ),
    (
        "name no offered tool cleans to",
        _name("subtract:"),
        [(CALL_ID, "subtract:")],
        StopReason.TOOL_USE,
    ),
    (
        "arguments wrapped in whitespace",
        _spaced_arguments,
        [(CALL_ID, "add")],
        StopReason.TOOL_USE,
    ),
]


@pytest.mark.parametrize(
    ("change", "expected", "stop"),
    [pytest.param(c, e, s, id=label) for label, c, e, s in VARIANTS],
)
async def test_quirks_on_the_real_whole_response(
    server: LoopbackServer,
    change: Callable[[dict[str, Any]], None] | None,
    expected: list[tuple[str, str]],
    stop: StopReason,
) -> None:
    server.script(whole("tool_call.json", change))
    async with local(server, stream=False) as model:
        response = await model.complete(ASK)
    assert [(c.id, c.name) for c in response.tool_calls] == expected
    assert all(c.input == ADD and c.raw_arguments is None for c in response.tool_calls)
    assert response.stop_reason is stop
    assert response.raw_stop_reason == ("stop" if change is _stop else "tool_calls")
    assert response.usage == (
        Usage(requests=1) if change is _no_usage else Usage(261, 14, requests=1)
    )


async def test_a_tools_only_assistant_turn_is_sent_with_empty_content(
    server: LoopbackServer,
) -> None:
    """The server rejects ``content: null`` (captured); compatible servers get ""."""
    rejected = captured_json("null_content_rejected.json")["error"]["message"]
    assert "Input should be a valid string" in rejected
    history = [
        Message("user", "Use the add tool to add 2 and 3."),
        Message("assistant", [ToolCall("call_1", "add", ADD)]),
        Message("user", [ToolResult("call_1", "5")]),
    ]
    server.script(whole("after_result.json"), whole("after_result.json"))
    async with local(server, stream=False) as model:
        await model.complete(ModelRequest(history, tools=TOOLS))
    async with OPENAI_CHAT.open(server, stream=False) as hosted:  # OpenAI itself: null
        await hosted.complete(ModelRequest(history, tools=TOOLS))
    sent = [r.body["messages"][1] for r in server.requests]
    assert [m["content"] for m in sent] == ["", None]
    assert all(m["tool_calls"][0]["id"] == "call_1" for m in sent)
