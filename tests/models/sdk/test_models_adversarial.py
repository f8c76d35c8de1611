"""The model as the adversary: hostile streams through each official SDK and a real Agent.

Each row of the tables is one thing a model (or a gateway in front of it) can
send, rendered in the wire format of every provider that can express it
(`models_adversary`) and answered by a real `toolweave.Agent` over the
official SDK and the loopback server. The promise checked on each: one result
per call in call order, a clear error result for the bad call while the
others run, a retry for a stream that breaks the protocol, never an internal
error, never a hang, never a second request that the provider would reject.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from models_adversary import Call, Turn, chat_sse, sse_for
from models_loopback import JsonReply, LoopbackServer, SseReply
from models_sdk_cases import ANTHROPIC, CASES, OPENAI_CHAT, OPENAI_RESPONSES, Case

import toolweave as tw
from toolweave import ModelError, ModelServerError, UnexpectedResponseError
from toolweave.messages import Message, Text, Thinking, ToolCall, ToolResult
from toolweave.models import ModelRequest, RetryPolicy, ToolDefinition
from toolweave.models._tokens import MAX_TOKENS

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

_NO_WAIT = RetryPolicy(initial_delay=0.0, jitter=0.0)
_NOT_JSON = "are not valid JSON"
_UNKNOWN = "Unknown tool"


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    return request.param  # type: ignore[no-any-return]


@tw.tool
def echo(x: int = 0) -> str:
    """Say which call this was."""
    return f"ok {x}"


@dataclass
class Outcome:
    result: tw.RunResult
    server: LoopbackServer
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)

    @property
    def answered(self) -> list[tuple[bool, str]]:
        """(is_error, text) of each result, in transcript order."""
        return [(r.is_error, str(r.content)) for r in self.results]

    @property
    def texts(self) -> list[str]:
        return [
            b.text
            for m in self.result.messages
            if m.role == "assistant" and not isinstance(m.content, str)
            for b in m.content
            if isinstance(b, Text)
        ]


async def run_agent(
    case: Case, server: LoopbackServer, tmp_path: Path, *replies: SseReply
) -> Outcome:
    """`replies` then a final "done", answered by a real Agent with the `echo` tool."""
    server.script(*replies, sse_for(case.id, Turn(text="done")))
    config = tw.AgentConfig(workspace=tmp_path, retry=_NO_WAIT)
    async with case.open(server) as model:
        agent = tw.Agent(model, [echo], config=config)
        try:
            result = await agent.run("go")
        finally:
            await agent.aclose()
    outcome = Outcome(result, server)
    for message in result.messages:
        if isinstance(message.content, str):
            continue
        for block in message.content:
            if isinstance(block, ToolCall):
                outcome.calls.append(block)
            elif isinstance(block, ToolResult):
                outcome.results.append(block)
    assert result.completion_reason is tw.CompletionReason.COMPLETED, result.detail
    assert result.output == "done"
    # One result per call, in call order: the promise on every row.
    assert len(outcome.results) == len(outcome.calls)
    assert [r.call_id for r in outcome.results] == [c.id for c in outcome.calls]
    return outcome


def _good(x: int) -> Call:
    return Call(f"good{x}", "echo", (json.dumps({"x": x}),))


# -- arguments ---------------------------------------------------------------------

_DEEP = "[" * 100_000 + "]" * 100_000
_DEEP_OBJECT = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"

ARGUMENTS = [
    pytest.param(_DEEP, id="nested-100000-deep-list"),
    pytest.param(_DEEP_OBJECT, id="nested-100000-deep-inside-an-object"),
    pytest.param("[1, 2]", id="a-list"),
    pytest.param('"x"', id="a-string"),
    pytest.param("42", id="a-number"),
    pytest.param("null", id="null"),
    pytest.param("true", id="true"),
    pytest.param('{"x": 1, "x": 2}', id="duplicate-key"),
    pytest.param('{"a": {"b": 1, "b": 1}}', id="duplicate-key-nested"),
    pytest.param('{"x": 1', id="unterminated"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("arguments", ARGUMENTS)
async def test_arguments_that_are_not_one_json_object_fail_that_call_only(
    case: Case, server: LoopbackServer, tmp_path: Path, arguments: str
) -> None:
    turn = Turn(calls=(_good(1), Call("bad", "echo", (arguments,)), _good(2)))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    (first, bad, last) = outcome.answered
    assert first == (False, "ok 1") and last == (False, "ok 2")
    assert bad[0] is True and _NOT_JSON in bad[1]
    # The call keeps what the model sent. OpenAI's wire carries arguments as
    # text, so they go back verbatim; Anthropic's needs an object: ``{}``.
    assert outcome.calls[1].raw_arguments == arguments
    sent = json.dumps(server.requests[1].body, ensure_ascii=False)
    if case.id == "anthropic":
        assert '"id": "bad", "name": "echo", "input": {}' in sent
    else:
        assert json.dumps(arguments, ensure_ascii=False)[:50] in sent


@pytest.mark.timeout(60)
async def test_arguments_in_thousands_of_one_character_deltas(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    text = json.dumps({"x": 7}).ljust(4000)  # trailing whitespace is still JSON
    turn = Turn(calls=(Call("c", "echo", tuple(text)),))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, "ok 7")]
    assert dict(outcome.calls[0].input) == {"x": 7}


@pytest.mark.timeout(60)
async def test_twenty_megabytes_of_arguments(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    big = json.dumps({"x": 3, "pad": "a" * (20 * 1024 * 1024)})
    parts = tuple(big[i : i + (1 << 20)] for i in range(0, len(big), 1 << 20))
    turn = Turn(calls=(Call("big", "echo", parts), _good(4)))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert len(outcome.calls[0].input["pad"]) == 20 * 1024 * 1024
    assert outcome.answered[1] == (False, "ok 4")
    # The call went to the tool (which rejects the parameter it does not have)
    # and the run went on; either way the call has exactly one result.
    assert len(outcome.answered) == 2


# -- tool names --------------------------------------------------------------------

NAMES = [
    pytest.param("", id="empty"),
    pytest.param("e" * 10_240, id="10KB"),
    pytest.param("echo/../echo", id="slash"),
    pytest.param("ec\x00ho", id="NUL"),
    pytest.param("echo\ud800", id="lone-surrogate"),
    pytest.param("\u202eohce", id="bidi-override"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", NAMES)
async def test_a_tool_name_nobody_offered_is_an_unknown_tool_result(
    case: Case, server: LoopbackServer, tmp_path: Path, name: str
) -> None:
    turn = Turn(calls=(Call("odd", name, ('{"x": 1}',)), _good(2)))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    bad, good = outcome.answered
    assert bad[0] is True and _UNKNOWN in bad[1]
    assert good == (False, "ok 2")
    assert len(bad[1]) < len(name) + 200, "the error result quotes, never amplifies"
    # The follow-up request reached the server as valid UTF-8 JSON (it parsed it).
    assert len(server.requests) == 2 and server.requests[1].body


# -- many calls --------------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_five_thousand_calls_in_one_response(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    turn = Turn(calls=tuple(_good(i) for i in range(5000)))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, f"ok {i}") for i in range(5000)]


@pytest.mark.timeout(60)
async def test_repeated_ids_keep_one_result_each_by_position(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    turn = Turn(calls=tuple(Call("same", "echo", (f'{{"x": {i}}}',)) for i in range(3)))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, f"ok {i}") for i in range(3)]


# -- text, stop reasons ------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_text_after_the_tool_calls_is_kept_after_them(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    turn = Turn(text="before", calls=(_good(1),), text_after="after")
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, "ok 1")]
    assert outcome.texts == ["before", "after", "done"]
    (first,) = [m for m in outcome.result.messages if m.role == "assistant"][:1]
    assert not isinstance(first.content, str)
    kinds = [type(b).__name__ for b in first.content]
    assert kinds == ["Text", "ToolCall", "Text"]


@pytest.mark.timeout(60)
async def test_a_fifty_megabyte_text_delta(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    server.script(sse_for(case.id, Turn(text="b" * (50 * 1024 * 1024))))
    async with case.open(server) as model:
        agent = tw.Agent(model, [echo], config=tw.AgentConfig(workspace=tmp_path))
        try:
            result = await agent.run("go")
        finally:
            await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert len(result.output) == 50 * 1024 * 1024


STOPS = {
    "anthropic": ("tool_use", "end_turn"),
    "openai_chat": ("tool_calls", "stop"),
}


# Responses has no stop reason of its own that names tool use: not in these two.
_STOP_CASES = pytest.mark.parametrize(
    "case", [ANTHROPIC, OPENAI_CHAT], ids=["anthropic", "openai_chat"]
)


@pytest.mark.timeout(60)
@_STOP_CASES
async def test_stop_says_tool_use_but_no_calls_came_ends_the_turn(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    """Nothing to run: the text is the answer; no call is invented."""
    turn = Turn(text="all done here", stop=STOPS[case.id][0])
    server.script(sse_for(case.id, turn))
    async with case.open(server) as model:
        agent = tw.Agent(model, [echo], config=tw.AgentConfig(workspace=tmp_path))
        try:
            result = await agent.run("go")
        finally:
            await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert result.output == "all done here"
    assert len(server.requests) == 1


@pytest.mark.timeout(60)
@_STOP_CASES
async def test_calls_under_an_end_turn_stop_still_run(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    turn = Turn(calls=(_good(1), _good(2)), stop=STOPS[case.id][1])
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, "ok 1"), (False, "ok 2")]


REFUSALS = {
    "anthropic": "refusal",
    "openai_chat": "content_filter",
    "openai_responses": "incomplete:content_filter",
}
TRUNCATIONS = {
    "anthropic": "max_tokens",
    "openai_chat": "length",
    "openai_responses": "incomplete:max_output_tokens",
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("stops", "why"),
    [
        pytest.param(REFUSALS, "as a refusal", id="refusal"),
        pytest.param(TRUNCATIONS, "truncated at max_tokens", id="truncation"),
    ],
)
async def test_calls_of_a_refused_or_truncated_response_are_answered_not_run(
    case: Case,
    server: LoopbackServer,
    tmp_path: Path,
    stops: dict[str, str],
    why: str,
) -> None:
    """The provider did not let the response through whole: fail closed, go on."""
    turn = Turn(calls=(_good(1), _good(2)), stop=stops[case.id])
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert [error for error, _ in outcome.answered] == [True, True]
    assert all(why in text and "Not run" in text for _, text in outcome.answered)


@pytest.mark.timeout(60)
async def test_chat_refusal_text_beside_tool_calls_runs_none_of_them(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """``delta.refusal`` with a ``stop`` finish is a refusal, calls or not."""
    refusal = (
        'data: {"id": "c", "object": "chat.completion.chunk", "created": 1,'
        ' "model": "m", "choices": [{"index": 0, "delta": {"refusal": "I cannot"},'
        ' "finish_reason": null}]}\n\n'
    )
    turn = Turn(calls=(_good(1),), stop="stop", extra_events=(refusal,))
    outcome = await run_agent(
        OPENAI_CHAT, server, tmp_path, sse_for("openai_chat", turn)
    )
    ((is_error, text),) = outcome.answered
    assert is_error and "as a refusal" in text


# -- usage -------------------------------------------------------------------------

USAGE = [
    pytest.param({"input": -5, "output": -7}, (0, 0), id="negative"),
    pytest.param({"input": 10**18, "output": 10**18}, (10**18, 10**18), id="1e18"),
    pytest.param(
        {"input": 10**400, "output": 1}, (MAX_TOKENS, 1), id="400-digits-capped"
    ),
    pytest.param({"input": 1e400, "output": 1}, (0, 1), id="infinite"),
    pytest.param({"input": "lots", "output": None}, (0, 0), id="not-numbers"),
    pytest.param({"input": 12.9, "output": [3]}, (12, 0), id="float-and-list"),
    pytest.param(None, (0, 0), id="missing"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("usage", "counted"), USAGE)
async def test_usage_a_budget_and_cost_can_add_up(
    case: Case,
    server: LoopbackServer,
    tmp_path: Path,
    usage: dict[str, Any] | None,
    counted: tuple[int, int],
) -> None:
    turn = Turn(calls=(_good(1),), usage=usage)
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, "ok 1")]
    total = outcome.result.usage
    done = (10, 5)  # the closing "done" turn's usage
    assert (total.input_tokens, total.output_tokens) == (
        counted[0] + done[0],
        counted[1] + done[1],
    )
    assert math.isfinite(outcome.result.cost) and outcome.result.cost >= 0


# -- framing -----------------------------------------------------------------------

NOT_JSON = {
    "anthropic": "event: content_block_delta\ndata: {not json\n\n",
    "openai_chat": "data: {not json\n\n",
    "openai_responses": "event: response.output_text.delta\ndata: {not json\n\n",
}
UNKNOWN_EVENT = {
    "anthropic": 'event: brand_new\ndata: {"type": "brand_new", "x": 1}\n\n',
    "openai_chat": 'data: {"type": "brand_new", "x": 1}\n\n',
    "openai_responses": (
        'event: response.brand_new\ndata: {"type": "response.brand_new",'
        ' "sequence_number": 900}\n\n'
    ),
}
MALFORMED_EVENT = {
    "anthropic": (
        "event: content_block_delta\n"
        'data: {"type": "content_block_delta", "index": 0, "delta": null}\n\n'
    ),
    "openai_chat": (
        'data: {"id": "c", "object": "chat.completion.chunk", "created": 1,'
        ' "model": "m", "choices": [{"index": 0, "delta": null}]}\n\n'
    ),
    "openai_responses": (
        "event: response.output_item.added\n"
        'data: {"type": "response.output_item.added", "sequence_number": 900,'
        ' "output_index": 9, "item": null}\n\n'
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda c: Turn(text="cut", final=False), id="no-final-event"),
        pytest.param(
            lambda c: Turn(text="bad", extra_events=(NOT_JSON[c],)), id="not-json"
        ),
        pytest.param(
            lambda c: Turn(text="bad", extra_events=(MALFORMED_EVENT[c],)),
            id="known-event-missing-fields",
        ),
        pytest.param(
            lambda c: Turn(calls=(_good(9),), final=False), id="calls-then-no-final"
        ),
    ],
)
async def test_a_stream_that_breaks_the_protocol_is_retried(
    case: Case,
    server: LoopbackServer,
    tmp_path: Path,
    make: Callable[[str], Turn],
) -> None:
    """The broken attempt leaves nothing behind: not its text, not its calls."""
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, make(case.id)))
    assert len(server.requests) == 2
    assert outcome.texts == ["done"]
    assert outcome.calls == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        pytest.param("just a string", "a JSON string", id="a-string"),
        pytest.param([1, 2], "a JSON list", id="a-list"),
        pytest.param(
            {"content": None, "output": None}, "a JSON object without", id="fields-null"
        ),
    ],
)
async def test_a_whole_body_that_is_not_a_response_is_named_not_retried(
    case: Case, server: LoopbackServer, body: Any, said: str
) -> None:
    """Not streamed: a body that is not the API's answer is named, with its URL.

    The SDK hands such a body on unvalidated; it is no response at all, so the
    same request would get it again: not retryable (issue 24, item 7).
    """
    server.script(JsonReply(200, body))
    async with case.open(server, stream=False) as model:
        with pytest.raises(UnexpectedResponseError) as caught:
            await model.complete(ModelRequest([Message("user", "go")]))
    error = caught.value
    assert not error.retryable
    assert said in str(error)
    assert f"{server.url}{case.path}" in str(error) and error.status == 200


BROKEN_INSIDE = {
    "anthropic": {"type": "message", "content": [7]},
    "openai_chat": {"choices": [{"index": 0, "message": None}]},
    "openai_responses": {"output": [{"type": "message", "content": None}]},
}


async def test_a_response_broken_inside_is_a_retryable_server_error(
    case: Case, server: LoopbackServer
) -> None:
    """The API's shape, broken inside: a malformed response, retryable as before."""
    server.script(JsonReply(200, BROKEN_INSIDE[case.id]))
    async with case.open(server, stream=False) as model:
        with pytest.raises(ModelError) as caught:
            await model.complete(ModelRequest([Message("user", "go")]))
    assert caught.value.retryable
    assert not isinstance(caught.value, UnexpectedResponseError)


@pytest.mark.timeout(60)
async def test_an_integer_past_the_decoders_digit_limit_is_retried(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Python refuses to parse a 5000-digit integer: the SDK raises ValueError."""
    raw = sse_for("openai_chat", Turn(text="x", usage={"input": 7, "output": 1})).raw
    raw = raw.replace('"prompt_tokens": 7', '"prompt_tokens": 1' + "0" * 5000)
    outcome = await run_agent(OPENAI_CHAT, server, tmp_path, SseReply(raw))
    assert len(server.requests) == 2 and outcome.texts == ["done"]


@pytest.mark.timeout(60)
async def test_an_unknown_event_type_is_skipped(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    turn = Turn(calls=(_good(1),), extra_events=(UNKNOWN_EVENT[case.id],))
    outcome = await run_agent(case, server, tmp_path, sse_for(case.id, turn))
    assert outcome.answered == [(False, "ok 1")]
    assert len(server.requests) == 2  # the turn, then "done": no retry


async def test_a_malformed_event_names_itself_in_the_error(
    case: Case, server: LoopbackServer
) -> None:
    server.script(
        sse_for(case.id, Turn(text="x", extra_events=(MALFORMED_EVENT[case.id],)))
    )
    async with case.open(server) as model:
        with pytest.raises(ModelServerError, match="malformed stream event"):
            await model.complete(ModelRequest([Message("user", "go")]))


# -- Chat Completions tool-call indexes --------------------------------------------

CHAT_INDEXES = [
    pytest.param((0, 7), id="gap-0-to-7"),
    pytest.param((3, 1), id="backwards-3-then-1"),
    pytest.param((5, 5), id="same-index-new-id"),
    pytest.param((2, 0, 9), id="up-down-up"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("indexes", CHAT_INDEXES)
async def test_chat_indexes_need_not_be_dense_or_ascending(
    server: LoopbackServer, tmp_path: Path, indexes: tuple[int, ...]
) -> None:
    """Each call is its own, in the order it started."""
    turn = Turn(calls=tuple(_good(i) for i in range(len(indexes))))
    reply = SseReply(chat_sse(turn, indexes=indexes))
    outcome = await run_agent(OPENAI_CHAT, server, tmp_path, reply)
    assert outcome.answered == [(False, f"ok {i}") for i in range(len(indexes))]


def _chunk(tool_call: dict[str, Any]) -> str:
    body = {
        "id": "chatcmpl-x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [
            {"index": 0, "delta": {"tool_calls": [tool_call]}, "finish_reason": None}
        ],
    }
    return f"data: {json.dumps(body)}\n\n"


def _header(index: int, call_id: str) -> dict[str, Any]:
    function = {"name": "echo", "arguments": ""}
    return {"index": index, "id": call_id, "type": "function", "function": function}


def _args(index: int, text: str) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": text}}


async def test_chat_arguments_for_a_call_already_handed_on_fail_the_stream(
    server: LoopbackServer,
) -> None:
    """Index 0 continued after index 1 closed it: never a second, nameless call."""
    events = [
        _chunk(_header(0, "a")),
        _chunk(_args(0, '{"x":')),
        _chunk(_header(1, "b")),
        _chunk(_args(0, " 1}")),
    ]
    turn = Turn(extra_events=tuple(events), calls=())
    server.script(SseReply(chat_sse(turn)))
    async with OPENAI_CHAT.open(server) as model:
        with pytest.raises(ModelServerError, match="index 0"):
            await model.complete(_with_echo())


@pytest.mark.timeout(60)
async def test_chat_arguments_for_an_index_never_opened_are_an_unknown_tool(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """No id, no name: a call the lifecycle answers as unknown, not a guess."""
    turn = Turn(extra_events=(_chunk(_args(4, '{"x": 1}')),), stop="tool_calls")
    outcome = await run_agent(OPENAI_CHAT, server, tmp_path, SseReply(chat_sse(turn)))
    ((is_error, text),) = outcome.answered
    assert is_error and _UNKNOWN in text


def _with_echo() -> ModelRequest:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    return ModelRequest(
        [Message("user", "go")], tools=(ToolDefinition("echo", "", schema),)
    )


# -- positions used twice ----------------------------------------------------------

REUSED = {
    "anthropic": ('"index": 1', '"index": 0'),
    "openai_chat": ('"index": 1', '"index": 0'),
    "openai_responses": ('"output_index": 1', '"output_index": 0'),
}


@pytest.mark.timeout(60)
async def test_two_calls_under_one_block_index_are_two_calls(
    case: Case, server: LoopbackServer, tmp_path: Path
) -> None:
    """A gateway that numbers both calls 0: neither overwrites the other."""
    raw = sse_for(case.id, Turn(calls=(_good(1), _good(2)))).raw
    old, new = REUSED[case.id]
    assert old in raw
    outcome = await run_agent(case, server, tmp_path, SseReply(raw.replace(old, new)))
    assert outcome.answered == [(False, "ok 1"), (False, "ok 2")]


def _anthropic_event(kind: str, **body: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **body})}\n\n"


def _delta(index: int, **delta: Any) -> str:
    return _anthropic_event("content_block_delta", index=index, delta=delta)


ANTHROPIC_MIXUPS = [
    pytest.param(
        _delta(0, type="text_delta", text="lost?"), "text_delta", id="text-into-a-call"
    ),
    pytest.param(
        _delta(0, type="thinking_delta", thinking="hm"),
        "thinking_delta",
        id="thinking-into-a-call",
    ),
    pytest.param(
        _delta(0, type="input_json_delta", partial_json='{"x": 1}'),
        "not an open tool_use",
        id="arguments-after-the-call-closed",
    ),
    pytest.param(
        _delta(7, type="input_json_delta", partial_json='{"x": 1}'),
        "not an open tool_use",
        id="arguments-for-a-block-never-opened",
    ),
]


@pytest.mark.parametrize(("event", "named"), ANTHROPIC_MIXUPS)
async def test_anthropic_delta_into_a_block_of_another_kind_fails_the_stream(
    server: LoopbackServer, event: str, named: str
) -> None:
    """Folded in, it would overwrite (or be overwritten by) the call: lost."""
    turn = Turn(calls=(_good(1),), extra_events=(event,))
    server.script(sse_for("anthropic", turn))
    async with ANTHROPIC.open(server) as model:
        with pytest.raises(ModelServerError, match=named):
            await model.complete(_with_echo())


async def test_anthropic_text_without_a_start_then_a_call_under_its_index(
    server: LoopbackServer,
) -> None:
    """An unannounced text block still owns its index: the call is a block of its own."""
    raw = sse_for("anthropic", Turn(calls=(_good(1),))).raw
    head, rest = raw.split("event: content_block_start", 1)
    text = _delta(0, type="text_delta", text="first")
    server.script(SseReply(head + text + "event: content_block_start" + rest))
    async with ANTHROPIC.open(server) as model:
        response = await model.complete(_with_echo())
    assert [type(b).__name__ for b in response.content] == ["Text", "ToolCall"]
    assert response.text == "first"


def _responses_event(kind: str, **body: Any) -> str:
    body = {"type": kind, "sequence_number": 900, **body}
    return f"event: {kind}\ndata: {json.dumps(body)}\n\n"


RESPONSES_MIXUPS = [
    pytest.param(
        _responses_event(
            "response.output_text.delta",
            item_id="fc_0",
            output_index=0,
            content_index=0,
            delta="lost?",
            logprobs=[],
        ),
        id="text-into-a-call",
    ),
    pytest.param(
        _responses_event(
            "response.reasoning_summary_text.delta",
            item_id="fc_0",
            output_index=0,
            summary_index=0,
            delta="hm",
        ),
        id="reasoning-into-a-call",
    ),
]


@pytest.mark.parametrize("event", RESPONSES_MIXUPS)
async def test_responses_delta_into_an_item_of_another_kind_fails_the_stream(
    server: LoopbackServer, event: str
) -> None:
    turn = Turn(calls=(_good(1),), extra_events=(event,))
    server.script(sse_for("openai_responses", turn))
    async with OPENAI_RESPONSES.open(server) as model:
        with pytest.raises(ModelServerError, match="a function_call item"):
            await model.complete(_with_echo())


async def test_responses_call_done_at_a_finished_message_position_is_its_own_item(
    server: LoopbackServer,
) -> None:
    """A call ``done`` at the position a message already finished at: both kept."""
    raw = sse_for("openai_responses", Turn(text="said", calls=(_good(1),))).raw
    raw = raw.replace('"output_index": 1', '"output_index": 0')
    # Drop the call's own ``added``: its ``done`` lands on the message's position.
    events = [
        e for e in raw.split("\n\n") if "output_item.added" not in e or "fc_" not in e
    ]
    server.script(SseReply("\n\n".join(events)))
    async with OPENAI_RESPONSES.open(server) as model:
        response = await model.complete(_with_echo())
    assert [type(b).__name__ for b in response.content] == ["Text", "ToolCall"]
    assert response.text == "said" and dict(response.tool_calls[0].input) == {"x": 1}


async def test_responses_done_item_without_arguments_keeps_the_streamed_ones(
    server: LoopbackServer,
) -> None:
    raw = sse_for("openai_responses", Turn(calls=(_good(5),))).raw
    done = '"arguments": "{\\"x\\": 5}", "call_id"'
    assert done in raw
    server.script(SseReply(raw.replace(done, '"arguments": null, "call_id"')))
    async with OPENAI_RESPONSES.open(server) as model:
        response = await model.complete(_with_echo())
    (call,) = response.tool_calls
    assert dict(call.input) == {"x": 5} and call.raw_arguments is None


# -- thinking ----------------------------------------------------------------------


async def test_anthropic_thinking_without_a_signature_never_goes_back(
    server: LoopbackServer,
) -> None:
    """Anthropic rejects unsigned thinking: it stays in the transcript, off the wire."""
    start = {"type": "thinking", "thinking": "", "signature": ""}
    events = (
        'event: content_block_start\ndata: {"type": "content_block_start",'
        f' "index": 0, "content_block": {json.dumps(start)}}}\n\n'
        'event: content_block_delta\ndata: {"type": "content_block_delta",'
        ' "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}\n\n'
        'event: content_block_stop\ndata: {"type": "content_block_stop",'
        ' "index": 0}\n\n'
    )
    raw = sse_for("anthropic", Turn(text="x")).raw
    head, rest = raw.split("event: content_block_start", 1)
    rest = rest.replace('"index": 0', '"index": 1')  # the text comes second
    server.script(SseReply(head + events + "event: content_block_start" + rest))
    async with ANTHROPIC.open(server) as model:
        response = await model.complete(ModelRequest([Message("user", "go")]))
        (thinking,) = [b for b in response.content if isinstance(b, Thinking)]
        assert thinking.text == "hmm" and not thinking.signature
        server.script(sse_for("anthropic", Turn(text="ok")))
        again = [Message("user", "go"), response.to_message(), Message("user", "on")]
        await model.complete(ModelRequest(again))
    sent = server.requests[1].body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["text"]
