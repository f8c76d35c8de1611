"""Responses item ids go back paired with the reasoning they followed.

OpenAI's Responses API ties a ``reasoning`` input item to the item the model
produced after it, by item id: a ``function_call`` (``fc_…``) or assistant
``message`` (``msg_…``) that followed a reasoning item must carry its id when
that reasoning item is sent ("Item 'rs_…' of type 'reasoning' was provided
without its required following item"), must not carry it when the reasoning
is left out ("… was provided without its required 'reasoning' item"), and a
``call_…`` id is never an item id ("Expected an ID that begins with 'fc'").

Every case here parses real captured Responses traffic (or items taken from it,
recomposed into new turns: tests/models/fixtures/README.md names the sources)
through the official SDK and our mapper, streamed and whole (``stream=False``),
sends the conversation back through the SDK to the loopback server, and reads
the request body the server received. The item shapes are checked against the
SDK's own TypedDicts.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Required, get_origin, get_type_hints

import pytest
from models_loopback import JsonReply, LoopbackServer, Reply, SseReply, fixture
from models_sdk_cases import ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, Case
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionToolCallParam,
    ResponseOutputMessageParam,
    ResponseOutputTextParam,
    ResponseReasoningItemParam,
)
from pydantic import TypeAdapter

import toolweave as tw
from toolweave.messages import (
    Message,
    ModelResponse,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from toolweave.models import ModelRequest, ToolDefinition
from toolweave.models._repair import ToolCallBuilder
from toolweave.sessions import SessionRecorder, SQLiteSessionStore, prepare_resume
from toolweave.sessions._codec import block_from_json, block_to_json

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

CAPTURED = Path(__file__).parents[1] / "fixtures"
Events = list[dict[str, Any]]


# -- the real recordings, taken apart into items -----------------------------------


def _turns(name: str) -> list[Events]:
    """The recording's events, one list per response."""
    turns: list[Events] = []
    for line in (CAPTURED / "openai_responses" / name).read_text().splitlines():
        if line.strip():
            event = json.loads(line)
            if event["type"] == "response.created":
                turns.append([])
            turns[-1].append(event)
    return turns


def _items(turn: Events) -> list[Events]:
    """The events of each output item of one response, in output order."""
    groups: dict[int, Events] = {}
    for event in turn:
        if "output_index" in event:
            groups.setdefault(event["output_index"], []).append(event)
    return [groups[i] for i in sorted(groups)]


def _done(group: Events) -> dict[str, Any]:
    (item,) = [e["item"] for e in group if e["type"] == "response.output_item.done"]
    return dict(item)


OPENAI = _turns("reasoning_encrypted_content.chunks.txt")
AZURE = _turns("azure_reasoning_encrypted_content.chunks.txt")
REASONING, CALL_A = _items(OPENAI[0])
(CALL_B,) = _items(OPENAI[1])
(CALL_C,) = _items(OPENAI[2])
(MESSAGE,) = _items(OPENAI[3])
REASONING_2, CALL_2 = _items(AZURE[0])
(WEB_SEARCH,) = _turns("web_search_tool.chunks.txt")


def _compose(*items: Events) -> Events:
    """One response holding `items` (events of real items), framed like the first turn."""
    base = OPENAI[0]
    out = [copy.deepcopy(e) for e in base if "output_index" not in e][:-1]
    output = []
    for position, group in enumerate(items):
        for event in copy.deepcopy(group):
            event["output_index"] = position
            out.append(event)
            if event["type"] == "response.output_item.done":
                output.append(event["item"])
    final = copy.deepcopy(base[-1])
    final["response"]["output"] = output
    out.append(final)
    for number, event in enumerate(out):
        event["sequence_number"] = number
    return out


def _edit(group: Events, change: Callable[[dict[str, Any]], None]) -> Events:
    """The item's events with `change` applied to its item (``added`` and ``done``)."""
    out = copy.deepcopy(group)
    for event in out:
        if "item" in event:
            change(event["item"])
    return out


def _without_ids(group: Events) -> Events:
    """The item as a gateway that sends no item ids streams it."""
    out = _edit(group, lambda item: item.pop("id", None))
    for event in out:
        event.pop("item_id", None)
    return out


def _without_encrypted(group: Events) -> Events:
    """A reasoning item asked for without ``include=reasoning.encrypted_content``."""
    return _edit(group, lambda item: item.pop("encrypted_content", None))


def _as_reply(events: Events, *, stream: bool) -> Reply:
    """The response as OpenAI sends it: named SSE events, or the whole body."""
    if stream:
        return SseReply(
            "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        )
    response = copy.deepcopy(events[-1]["response"])
    response["output"] = [
        e["item"] for e in events if e["type"] == "response.output_item.done"
    ]
    return JsonReply(200, response)


def _tools(*names: str) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(n, "", {"type": "object", "properties": {}})
        for n in names or ("calculator",)
    )


async def _parse(
    server: LoopbackServer, reply: Reply, *, stream: bool, case: Case = OPENAI_RESPONSES
) -> ModelResponse:
    server.script(reply)
    async with case.open(server, stream=stream) as model:
        return await model.complete(
            ModelRequest([Message("user", "go")], tools=_tools())
        )


async def _send_back(
    server: LoopbackServer,
    response: ModelResponse,
    *,
    case: Case = OPENAI_RESPONSES,
    **options: Any,
) -> dict[str, Any]:
    """The conversation, answered by a result per call, sent again: the wire body."""
    messages = [Message("user", "go"), response.to_message()]
    if response.tool_calls:
        results = tuple(ToolResult(c.id, "ok") for c in response.tool_calls)
        messages.append(Message("user", results))
    else:
        messages.append(Message("user", "go on"))
    if case is OPENAI_RESPONSES:  # a real text turn, as the mode asks for it
        server.script(_as_reply(OPENAI[3], stream=options.get("stream", True)))
    else:
        server.script(fixture(case.fixtures, "text"))
    async with case.open(server, **options) as model:
        await model.complete(ModelRequest(messages, tools=_tools()))
    body = server.requests[-1].body
    assert isinstance(body, dict)
    return body


# -- what the API accepts --------------------------------------------------------------


def _keys(typed: Any) -> tuple[set[str], set[str]]:
    """(required keys, all keys) of one of the SDK's TypedDicts."""
    hints = get_type_hints(typed, include_extras=True)
    return {k for k, v in hints.items() if get_origin(v) is Required}, set(hints)


def _conforms(item: dict[str, Any], typed: Any) -> None:
    required, known = _keys(typed)
    assert required <= item.keys() <= known, (typed.__name__, item)
    TypeAdapter(typed).validate_python(item)


def _assistant_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The input items the model wrote (reasoning, messages, calls), in order."""
    return [
        i
        for i in body["input"]
        if i.get("type") in ("reasoning", "function_call", "message")
        or i.get("role") == "assistant"
    ]


def _wire(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(kind, item id) of each assistant input item, after checking its shape.

    Kind is ``reasoning``, ``call``, ``message`` (with an id: the output-message
    form) or ``text`` (the short assistant form, which has no id).
    """
    out: list[tuple[str, str | None]] = []
    for item in _assistant_items(body):
        kind = item.get("type")
        if kind == "reasoning":
            _conforms(item, ResponseReasoningItemParam)
            out.append(("reasoning", item["id"]))
        elif kind == "function_call":
            _conforms(item, ResponseFunctionToolCallParam)
            assert item["call_id"] and not item["call_id"].startswith("fc_")
            if "id" in item:
                assert item["id"].startswith("fc_"), item  # never a call_ id
            out.append(("call", item.get("id")))
        elif kind == "message":
            _conforms(item, ResponseOutputMessageParam)
            assert item["id"].startswith("msg_"), item
            for part in item["content"]:
                _conforms(part, ResponseOutputTextParam)
            out.append(("message", item["id"]))
        else:
            _conforms(item, EasyInputMessageParam)
            assert "id" not in item
            out.append(("text", None))
    _paired(out)
    return out


def _paired(wire: list[tuple[str, str | None]]) -> None:
    """The pairing rules the API enforces, on one request's assistant items.

    (Whether the item after a reasoning item carries an id depends on what
    the server gave: each test states the ids it expects.)
    """
    for index, (kind, _) in enumerate(wire):
        if kind == "reasoning":  # followed by the item it produced
            assert index + 1 < len(wire), wire
            assert wire[index + 1][0] in ("call", "message", "text"), wire
    reasoning_sent = False
    for kind, item_id in wire:
        reasoning_sent = reasoning_sent or kind == "reasoning"
        if item_id is not None and kind != "reasoning":
            assert reasoning_sent, wire  # an item id only with its reasoning


STREAM = pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])


# -- reasoning then calls: the fc_ ids go back ------------------------------------


@STREAM
@pytest.mark.parametrize("turn", [OPENAI[0], AZURE[0]], ids=["openai", "azure"])
async def test_reasoning_then_call_sends_the_fc_id(
    server: LoopbackServer, stream: bool, turn: Events
) -> None:
    reasoning, call_item = (_done(g) for g in _items(turn))
    response = await _parse(server, _as_reply(turn, stream=stream), stream=stream)
    thinking, call = response.content
    assert isinstance(thinking, Thinking) and isinstance(call, ToolCall)
    assert call.id == call_item["call_id"] and call.id.startswith("call_")
    assert call.provider_id == call_item["id"]
    assert call_item["id"].startswith("fc_")
    assert thinking.provider_id == reasoning["id"]

    body = await _send_back(server, response, stream=stream)
    assert _wire(body) == [("reasoning", reasoning["id"]), ("call", call_item["id"])]
    call_sent = _assistant_items(body)[1]
    assert call_sent["call_id"] == call_item["call_id"]
    outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == [call_item["call_id"]]


async def test_whole_recording_reasoning_then_call(server: LoopbackServer) -> None:
    """A whole captured body (``stream=False``): reasoning, then ``update_plan``."""
    recorded = json.loads(
        (CAPTURED / "openai_responses/reasoning_function_call.json").read_text()
    )
    reasoning, call_item = recorded["output"]
    response = await _parse(server, JsonReply(200, recorded), stream=False)
    assert response.tool_calls[0].provider_id == call_item["id"]
    body = await _send_back(server, response, stream=False)
    assert _wire(body) == [("reasoning", reasoning["id"]), ("call", call_item["id"])]


# -- reasoning then a message: the msg_ id goes back -----------------------------


@STREAM
async def test_message_after_reasoning_carries_its_msg_id(
    server: LoopbackServer, stream: bool
) -> None:
    events = _compose(REASONING, MESSAGE)
    message = _done(MESSAGE)
    response = await _parse(server, _as_reply(events, stream=stream), stream=stream)
    _, text = response.content
    assert isinstance(text, Text) and text.provider_id == message["id"]
    body = await _send_back(server, response, stream=stream)
    assert _wire(body) == [
        ("reasoning", _done(REASONING)["id"]),
        ("message", message["id"]),
    ]
    sent = _assistant_items(body)[1]
    assert sent == {
        "type": "message",
        "role": "assistant",
        "id": message["id"],
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": message["content"][0]["text"],
                "annotations": [],
            }
        ],
    }


@STREAM
async def test_hosted_search_turn_pairs_only_the_last_reasoning(
    server: LoopbackServer, stream: bool
) -> None:
    """Real web search: reasoning / search items alternate, then reasoning, then the message.

    Its reasoning has no encrypted content: stateless, none goes back and the
    message goes without its id; stored, the last reasoning item goes back with
    the message's id (the others led to search items the transcript lacks).
    """
    groups = _items(WEB_SEARCH)
    reasoning, message = _done(groups[-2]), _done(groups[-1])
    response = await _parse(server, _as_reply(WEB_SEARCH, stream=stream), stream=stream)
    assert response.content[-1] == Text(response.text)
    stateless = await _send_back(server, response, stream=stream)
    assert _wire(stateless) == [("text", None)]
    stored = await _send_back(server, response, stream=stream, store=True)
    assert _wire(stored) == [("reasoning", reasoning["id"]), ("message", message["id"])]


@STREAM
async def test_a_message_without_reasoning_goes_without_its_id(
    server: LoopbackServer, stream: bool
) -> None:
    """The real last turn: a message alone; its id pairs with nothing, so it stays home."""
    response = await _parse(server, _as_reply(OPENAI[3], stream=stream), stream=stream)
    (text,) = response.content
    assert isinstance(text, Text) and text.provider_id == _done(MESSAGE)["id"]
    body = await _send_back(server, response, stream=stream)
    assert _wire(body) == [("text", None)]


# -- reasoning left out: the ids are stripped ---------------------------------------


@STREAM
async def test_dropped_reasoning_strips_the_item_ids(
    server: LoopbackServer, stream: bool
) -> None:
    """Without encrypted content, stateless reasoning cannot go back; its items go bare."""
    events = _compose(_without_encrypted(REASONING), CALL_A, CALL_B)
    response = await _parse(server, _as_reply(events, stream=stream), stream=stream)
    assert [c.provider_id for c in response.tool_calls] == [
        _done(CALL_A)["id"],
        _done(CALL_B)["id"],
    ]
    stateless = await _send_back(server, response, stream=stream)
    assert _wire(stateless) == [("call", None), ("call", None)]
    assert "fc_" not in json.dumps(stateless["input"])
    stored = await _send_back(server, response, stream=stream, store=True)
    assert _wire(stored) == [
        ("reasoning", _done(REASONING)["id"]),
        ("call", _done(CALL_A)["id"]),
        ("call", _done(CALL_B)["id"]),
    ]


# -- the agent loop: the next request carries the ids -----------------------------


@tw.tool(concurrency=tw.Concurrency.SAFE, access=tw.Access())
def calculator(a: int, b: int, op: str) -> str:
    """Add or multiply two numbers."""
    return str(a + b if op == "add" else a * b)


@STREAM
async def test_the_loop_sends_the_ids_on_its_next_request(
    server: LoopbackServer, stream: bool, tmp_path: Path
) -> None:
    first = _compose(REASONING, MESSAGE, CALL_A, CALL_B)
    server.script(_as_reply(first, stream=stream), _as_reply(OPENAI[3], stream=stream))
    async with OPENAI_RESPONSES.open(server, stream=stream) as model:
        agent = tw.Agent(model, [calculator], config=tw.AgentConfig(workspace=tmp_path))
        try:
            result = await agent.run("Compute.")
        finally:
            await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    first_request, second = (r.body for r in server.requests)
    assert _wire(first_request) == []
    assert _wire(second) == [
        ("reasoning", _done(REASONING)["id"]),
        ("message", _done(MESSAGE)["id"]),
        ("call", _done(CALL_A)["id"]),
        ("call", _done(CALL_B)["id"]),
    ]
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert [o["output"] for o in outputs] == ["19", "57"]  # 12 + 7, 19 * 3


# -- the adversarial table ------------------------------------------------------------


def _reused_call_id(group: Events) -> Events:
    """CALL_B spelled with CALL_A's call id (a server that repeats ids)."""
    call_id = _done(CALL_A)["call_id"]
    return _edit(group, lambda item: item.update(call_id=call_id))


def _call_id_as_item_id(group: Events) -> Events:
    """A gateway that gives the call's ``call_…`` id as its item id too."""
    return _edit(group, lambda item: item.update(id=item["call_id"]))


def _foreign_message_id(group: Events) -> Events:
    """A proxy that renames items (GitHub Copilot's ids carry no ``msg_`` prefix)."""
    out = _edit(group, lambda item: item.update(id="capture-id-68"))
    for event in out:
        if "item_id" in event:
            event["item_id"] = "capture-id-68"
    return out


def _id(group: Events) -> str:
    return str(_done(group)["id"])


# (name, items of the response, store, the assistant items expected on the wire)
TABLE: list[tuple[str, tuple[Events, ...], bool, list[tuple[str, str | None]]]] = [
    (
        "parallel calls after one reasoning item: every item id goes",
        (REASONING, CALL_A, CALL_B, CALL_C),
        False,
        [
            ("reasoning", _id(REASONING)),
            ("call", _id(CALL_A)),
            ("call", _id(CALL_B)),
            ("call", _id(CALL_C)),
        ],
    ),
    (
        "two reasoning items in one turn: each pairs with its own calls",
        (REASONING, CALL_A, REASONING_2, CALL_2),
        False,
        [
            ("reasoning", _id(REASONING)),
            ("call", _id(CALL_A)),
            ("reasoning", _id(REASONING_2)),
            ("call", _id(CALL_2)),
        ],
    ),
    (
        "two reasoning items, the first not sendable: its call goes bare",
        (_without_encrypted(REASONING), CALL_A, REASONING_2, CALL_2),
        False,
        [("call", None), ("reasoning", _id(REASONING_2)), ("call", _id(CALL_2))],
    ),
    (
        "two reasoning items in a row: only the one right before the call goes",
        (REASONING, REASONING_2, CALL_A),
        False,
        [("reasoning", _id(REASONING_2)), ("call", _id(CALL_A))],
    ),
    (
        "text then calls after reasoning: the message and the calls keep their ids",
        (REASONING, MESSAGE, CALL_A, CALL_B),
        False,
        [
            ("reasoning", _id(REASONING)),
            ("message", _id(MESSAGE)),
            ("call", _id(CALL_A)),
            ("call", _id(CALL_B)),
        ],
    ),
    (
        "text before the reasoning: it followed no reasoning, so no id",
        (MESSAGE, REASONING, CALL_A),
        False,
        [("text", None), ("reasoning", _id(REASONING)), ("call", _id(CALL_A))],
    ),
    (
        "a gateway that omits call item ids: no pairing, so the reasoning stays out",
        (REASONING, _without_ids(CALL_A), _without_ids(CALL_B)),
        False,
        [("call", None), ("call", None)],
    ),
    (
        "a gateway that omits the message id: the short form, no reasoning",
        (REASONING, _without_ids(MESSAGE)),
        False,
        [("text", None)],
    ),
    (
        "a call_ id given as the item id is never sent as one (nor the reasoning)",
        (REASONING, _call_id_as_item_id(CALL_A)),
        False,
        [("call", None)],
    ),
    (
        "a message id without the msg_ prefix is not sent (nor the reasoning)",
        (REASONING, _foreign_message_id(MESSAGE)),
        False,
        [("text", None)],
    ),
    (
        "repeated call ids are respelled on the wire; item ids are not touched",
        (REASONING, CALL_A, _reused_call_id(CALL_B)),
        False,
        [
            ("reasoning", _id(REASONING)),
            ("call", _id(CALL_A)),
            ("call", _id(CALL_B)),
        ],
    ),
    (
        "stored: reasoning without encrypted content goes by id, with its items' ids",
        (_without_encrypted(REASONING), CALL_A),
        True,
        [("reasoning", _id(REASONING)), ("call", _id(CALL_A))],
    ),
]


@STREAM
@pytest.mark.parametrize(
    ("items", "store", "expected"),
    [case[1:] for case in TABLE],
    ids=[case[0] for case in TABLE],
)
async def test_adversarial_pairing(
    server: LoopbackServer,
    stream: bool,
    items: tuple[Events, ...],
    store: bool,
    expected: list[tuple[str, str | None]],
) -> None:
    events = _compose(*items)
    response = await _parse(server, _as_reply(events, stream=stream), stream=stream)
    body = await _send_back(server, response, stream=stream, store=store)
    assert _wire(body) == expected
    calls = [i for i in body["input"] if i.get("type") == "function_call"]
    call_ids = [c["call_id"] for c in calls]
    assert len(call_ids) == len(set(call_ids))  # respelled where the model repeated
    outputs = [
        i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"
    ]
    assert outputs == call_ids
    for call in calls:
        assert call.get("id") != call["call_id"]


async def test_repeated_call_ids_are_respelled_but_item_ids_are_kept(
    server: LoopbackServer,
) -> None:
    events = _compose(REASONING, CALL_A, _reused_call_id(CALL_B))
    response = await _parse(server, _as_reply(events, stream=True), stream=True)
    body = await _send_back(server, response)
    call_id = _done(CALL_A)["call_id"]
    calls = [i for i in body["input"] if i.get("type") == "function_call"]
    assert [(c["call_id"], c["id"]) for c in calls] == [
        (call_id, _id(CALL_A)),
        (f"{call_id}_2", _id(CALL_B)),
    ]
    # The transcript keeps the model's ids; only the wire is respelled.
    assert [c.id for c in response.tool_calls] == [call_id, call_id]


# -- other providers: their calls carry no item ids; they never send ours ----------


@STREAM
@pytest.mark.parametrize(
    ("case", "recording"),
    [
        (OPENAI_CHAT, "openai_chat/parallel_tool_calls.sse"),
        (ANTHROPIC, "anthropic/thinking_tool_use.json"),
    ],
    ids=["chat", "anthropic"],
)
async def test_foreign_calls_replayed_to_responses_send_no_item_ids(
    server: LoopbackServer, stream: bool, case: Case, recording: str
) -> None:
    raw = (CAPTURED / recording).read_text()
    reply: Reply = (
        SseReply(raw) if recording.endswith(".sse") else JsonReply(200, json.loads(raw))
    )
    is_sse = isinstance(reply, SseReply)
    response = await _parse(server, reply, stream=is_sse, case=case)
    assert response.tool_calls
    assert all(c.provider_id is None for c in response.tool_calls)
    assert all(b.provider_id is None for b in response.content if isinstance(b, Text))
    body = await _send_back(server, response, stream=stream)
    wire = _wire(body)
    assert wire and all(item_id is None for _, item_id in wire)
    assert "reasoning" not in [kind for kind, _ in wire]  # not OpenAI's reasoning


@pytest.mark.parametrize("case", [ANTHROPIC, OPENAI_CHAT], ids=["anthropic", "chat"])
async def test_other_providers_never_send_responses_item_ids(
    server: LoopbackServer, case: Case
) -> None:
    events = _compose(REASONING, MESSAGE, CALL_A)
    response = await _parse(server, _as_reply(events, stream=True), stream=True)
    assert response.tool_calls[0].provider_id == _id(CALL_A)
    body = await _send_back(server, response, case=case)
    sent = json.dumps(body)
    assert _id(CALL_A) not in sent and _id(MESSAGE) not in sent
    assert _done(CALL_A)["call_id"] in sent  # the call itself goes, by its call id


# -- the session store keeps the ids; a resumed session sends them -----------------


async def _run(
    server: LoopbackServer,
    store: SQLiteSessionStore,
    sid: str,
    prompt: str,
    *,
    stream: bool,
    tmp_path: Path,
    history: Sequence[Message] = (),
) -> None:
    recorder = SessionRecorder(store, sid, model="gpt-5")
    async with OPENAI_RESPONSES.open(server, stream=stream) as model:
        agent = tw.Agent(model, [calculator], config=tw.AgentConfig(workspace=tmp_path))
        try:
            async for event in agent.run_stream(prompt, history=history):
                recorder.record(event)
        finally:
            await agent.aclose()


def _first_turn(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The input items from the first reasoning item through the first tool output."""
    items = body["input"]
    start = next(i for i, it in enumerate(items) if it.get("type") == "reasoning")
    end = next(
        i for i, it in enumerate(items) if it.get("type") == "function_call_output"
    )
    return list(items[start:end])


@STREAM
async def test_ids_survive_the_store_and_a_resumed_session_sends_them(
    server: LoopbackServer, stream: bool, tmp_path: Path
) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)
    sid = store.create_session(workspace=str(tmp_path), model="gpt-5", title="t").id
    server.script(
        _as_reply(_compose(REASONING, MESSAGE, CALL_A), stream=stream),
        _as_reply(OPENAI[3], stream=stream),
    )
    await _run(server, store, sid, "Compute.", stream=stream, tmp_path=tmp_path)
    live = _first_turn(server.requests[1].body)
    assert [(i.get("type"), i.get("id")) for i in live] == [
        ("reasoning", _id(REASONING)),
        ("message", _id(MESSAGE)),
        ("function_call", _id(CALL_A)),
    ]
    store.close()

    store = SQLiteSessionStore(path)  # another process, reading the file
    assistant = store.messages(sid)[1]
    _, text, call = assistant.blocks
    assert isinstance(text, Text) and text.provider_id == _id(MESSAGE)
    assert isinstance(call, ToolCall) and call.provider_id == _id(CALL_A)
    (record,) = store.calls(sid)
    assert record.call.provider_id == _id(CALL_A)
    plan = prepare_resume(store, sid, prompt="And again.")
    server.script(_as_reply(OPENAI[3], stream=stream))
    await _run(
        server,
        store,
        sid,
        plan.prompt,
        stream=stream,
        tmp_path=tmp_path,
        history=plan.history,
    )
    store.close()
    resumed = server.requests[-1].body
    assert _first_turn(resumed) == live
    # The final message of run 1 followed no reasoning: the short form, no id.
    assert _wire(resumed)[-1] == ("text", None)


async def test_rows_stored_before_item_ids_still_load(
    server: LoopbackServer, tmp_path: Path
) -> None:
    """Blocks written without ``provider_id`` read back with None and go without ids."""
    path = tmp_path / "sessions.db"
    store = SQLiteSessionStore(path)
    sid = store.create_session(workspace=str(tmp_path), model="gpt-5", title="t").id
    server.script(
        _as_reply(_compose(REASONING, MESSAGE, CALL_A), stream=True),
        _as_reply(OPENAI[3], stream=True),
    )
    await _run(server, store, sid, "Compute.", stream=True, tmp_path=tmp_path)
    store.close()

    def strip(data: Any) -> Any:
        if isinstance(data, dict):
            return {
                k: strip(v)
                for k, v in data.items()
                if not (
                    k == "provider_id" and data.get("type") in ("text", "tool_call")
                )
            }
        if isinstance(data, list):
            return [strip(v) for v in data]
        return data

    with sqlite3.connect(path) as db:  # rewrite every row as an older version wrote it
        for table, column, key in (
            ("messages", "body", "id"),
            ("calls", "call", "rowid"),
        ):
            rows = db.execute(f"SELECT {key}, {column} FROM {table}").fetchall()
            for row_key, text in rows:
                old = json.dumps(strip(json.loads(text)))
                db.execute(
                    f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (old, row_key)
                )
    db.close()

    store = SQLiteSessionStore(path)
    assistant = store.messages(sid)[1]
    thinking, text, call = assistant.blocks
    assert isinstance(thinking, Thinking) and thinking.provider_id == _id(REASONING)
    assert isinstance(text, Text) and text.provider_id is None
    assert isinstance(call, ToolCall) and call.provider_id is None
    assert store.calls(sid)[0].call.provider_id is None
    plan = prepare_resume(store, sid, prompt="And again.")
    server.script(_as_reply(OPENAI[3], stream=True))
    await _run(
        server,
        store,
        sid,
        plan.prompt,
        stream=True,
        tmp_path=tmp_path,
        history=plan.history,
    )
    store.close()
    wire = _wire(server.requests[-1].body)
    assert all(item_id is None for kind, item_id in wire if kind != "reasoning")


def test_codec_round_trips_item_ids_and_reads_old_blocks() -> None:
    call = ToolCall("call_1", "f", {}, key="1.0", provider_id="fc_1")
    text = Text("hi", provider_id="msg_1")
    for block in (call, text):
        back = block_from_json(json.loads(json.dumps(block_to_json(block))))
        assert back == block and back.provider_id == block.provider_id
    assert "provider_id" not in block_to_json(Text("plain"))
    assert "provider_id" not in block_to_json(ToolCall("call_2", "f", {}))
    old_call = block_from_json(
        {"type": "tool_call", "id": "call_1", "name": "f", "input": {}}
    )
    old_text = block_from_json({"type": "text", "text": "hi"})
    assert isinstance(old_call, ToolCall) and old_call.provider_id is None
    assert isinstance(old_text, Text) and old_text.provider_id is None


def test_item_ids_are_not_part_of_equality() -> None:
    """Every existing comparison of blocks keeps working: the id is metadata."""
    assert Text("a", provider_id="msg_1") == Text("a")
    assert ToolCall("c", "f", {}, provider_id="fc_1") == ToolCall("c", "f", {})
    assert hash(Text("a", provider_id="msg_1")) == hash(Text("a"))


def test_an_unpacked_wrapper_call_keeps_its_item_id_on_the_first_call_only() -> None:
    """One provider item stands for several calls; item ids must stay unique."""
    uses = [
        {"recipient_name": "functions.calculator", "parameters": {"a": 1}},
        {"recipient_name": "functions.calculator", "parameters": {"a": 2}},
    ]
    calls = ToolCallBuilder(tool_names=["calculator"]).build(
        "call_w", "multi_tool_use.parallel", {"tool_uses": uses}, provider_id="fc_w"
    )
    assert [(c.name, c.provider_id) for c in calls] == [
        ("calculator", "fc_w"),
        ("calculator", None),
    ]
