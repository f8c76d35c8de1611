"""Approvals and `RunState` resume through `scheduled_tools`, over the wire.

The official SDK (``OpenAIResponsesModel`` and ``OpenAIChatCompletionsModel``
on the official ``openai`` client) talks to a loopback server speaking each
wire format; nothing stands in for the model. Each scenario runs with the bare
tools and with `scheduled_tools` (declared, and undeclared = barriers) and
compares what matters to a user: the interruptions, what every request sent
the model, the final output, and how often each tool body ran. Then the
schedule itself: calls approved on resume keep toolweave's schedule (reads
meet at a rendezvous, the write runs alone).

asyncio only: the SDK runs its tool calls with asyncio's own tasks (trio
cannot host it; tests/integrations/conftest.py).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunContextWrapper,
    Runner,
    RunState,
    function_tool,
    set_tracing_disabled,
)
from framework_probe import DECLARATIONS, SCENARIO, Probe
from openai import AsyncOpenAI

from toolweave import Access, Concurrency
from toolweave.integrations import READ_ONLY, Declaration
from toolweave.integrations.openai_agents import scheduled_tools

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import JsonReply, LoopbackServer

set_tracing_disabled(True)
pytestmark = pytest.mark.anyio

Calls = Sequence[tuple[str, dict[str, Any]]]

# -- the two wire formats -----------------------------------------------------


def _responses_reply(turn: int, calls: Calls | None) -> JsonReply:
    if calls is None:
        output: list[dict[str, Any]] = [
            {
                "type": "message",
                "id": f"msg_{turn}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "done", "annotations": []}],
            }
        ]
    else:
        output = [
            {
                "type": "function_call",
                "id": f"fc_{turn}_{i}",
                "call_id": f"t{turn}c{i}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            for i, (name, args) in enumerate(calls)
        ]
    usage = {
        "input_tokens": 1,
        "output_tokens": 1,
        "total_tokens": 2,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    body = {
        "id": f"resp_{turn}",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    return JsonReply(200, body)


def _chat_reply(turn: int, calls: Calls | None) -> JsonReply:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if calls is None:
        message["content"] = "done"
    else:
        message["tool_calls"] = [
            {
                "id": f"t{turn}c{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    body = {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if calls is None else "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    return JsonReply(200, body)


def _outputs(wire: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """The tool outputs one request sent the model: (call id, text), in order."""
    if wire == "responses":
        return [
            (item["call_id"], str(item["output"]))
            for item in body["input"]
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
    return [
        (m["tool_call_id"], str(m["content"]))
        for m in body["messages"]
        if m.get("role") == "tool"
    ]


@dataclass
class Wire:
    """A loopback endpoint and the SDK model that talks to it."""

    name: str
    server: LoopbackServer
    clients: list[AsyncOpenAI] = field(default_factory=list)

    def script(self, *turns: Calls | None) -> None:
        reply = _responses_reply if self.name == "responses" else _chat_reply
        self.server.script(*(reply(i, calls) for i, calls in enumerate(turns)))

    def model(self) -> Any:
        client = AsyncOpenAI(
            base_url=f"{self.server.url}/v1", api_key="test", max_retries=0
        )
        self.clients.append(client)
        if self.name == "responses":
            return OpenAIResponsesModel("m", client)
        return OpenAIChatCompletionsModel("m", client)

    def sent(self) -> list[list[tuple[str, str]]]:
        """Per request, the tool outputs it carried."""
        assert not self.server.unexpected, self.server.unexpected
        assert not self.server.errors, self.server.errors
        return [_outputs(self.name, r.body) for r in self.server.requests]


@pytest.fixture(params=["responses", "chat"])
async def wire(request: pytest.FixtureRequest) -> AsyncIterator[Wire]:
    with LoopbackServer() as server:
        made = Wire(request.param, server)
        try:
            yield made
        finally:
            for client in made.clients:
                await client.close()


# -- the tools -------------------------------------------------------------------


async def _risky(
    ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
) -> bool:
    """An approval policy: keys starting with "x" need a person."""
    del ctx, call_id
    return str(params["key"]).startswith("x")


def _tools(ran: Counter[tuple[str, str]]) -> list[FunctionTool]:
    @function_tool
    async def read(key: str) -> str:
        """Read a key (never asks)."""
        ran["read", key] += 1
        return f"value of {key}"

    @function_tool(needs_approval=True)
    async def write(key: str) -> str:
        """Write a key (always asks)."""
        ran["write", key] += 1
        return f"wrote {key}"

    @function_tool(needs_approval=_risky)
    def drop(key: str) -> str:
        """Drop a key (asks for risky keys); sync."""
        ran["drop", key] += 1
        return f"dropped {key}"

    async def invoke(ctx: Any, input_json: str) -> str:
        key = json.loads(input_json)["key"]
        ran["manual", key] += 1
        return f"manual {key}"

    manual = FunctionTool(
        name="manual",
        description="A hand-built tool that always asks.",
        params_json_schema={
            "type": "object",
            "properties": {"key": {"type": "string"}},
            "required": ["key"],
            "additionalProperties": False,
        },
        on_invoke_tool=invoke,
        needs_approval=True,
    )
    return [read, write, drop, manual]


def _key_of(args: dict[str, Any]) -> Access:
    return Access(writes=(f"db:{args['key']}",))


APPROVAL_DECLARATIONS = {
    "read": Declaration(
        concurrency=Concurrency.SAFE,
        access=lambda args: Access(reads=(f"db:{args['key']}",)),
    ),
    "write": Declaration(access=_key_of),
    "drop": Declaration(access=_key_of),
    "manual": Declaration(access=_key_of),
}


def _build(kind: str, ran: Counter[tuple[str, str]]) -> list[Any]:
    tools = _tools(ran)
    if kind == "plain":
        return tools
    return scheduled_tools(tools, APPROVAL_DECLARATIONS if kind == "declared" else {})


# -- approve / reject and resume: the same as with the bare tools -------------------

MIXED: Calls = [
    ("read", {"key": "a"}),  # never asks: runs in the first turn
    ("write", {"key": "a"}),  # always asks
    ("drop", {"key": "x1"}),  # the policy asks
    ("drop", {"key": "b"}),  # the policy does not ask: runs in the first turn
    ("manual", {"key": "m"}),  # a hand-built tool that asks
    ("read", {"key": "b"}),
]
AGAIN: Calls = [
    ("write", {"key": "c"}),
    ("drop", {"key": "x2"}),
    ("read", {"key": "c"}),
]

Decide = Callable[[RunState[Any], Any], None]


def _approve(state: RunState[Any], item: Any) -> None:
    state.approve(item)


def _reject(state: RunState[Any], item: Any) -> None:
    state.reject(item)


def _mixed(state: RunState[Any], item: Any) -> None:
    if item.name in ("write", "manual"):
        state.approve(item)
    else:
        state.reject(item, rejection_message=f"no {item.call_id}, said ann")


def _always(state: RunState[Any], item: Any) -> None:
    if item.name == "write":
        state.approve(item, always_approve=True)
    else:
        state.reject(item, always_reject=True)


DECISIONS: dict[str, Decide] = {
    "approve": _approve,
    "reject": _reject,
    "mixed": _mixed,
    "always": _always,
}


def _pending(result: Any) -> list[tuple[str | None, str | None, Any]]:
    return [(i.name, i.call_id, i.arguments) for i in result.interruptions]


async def _approval_run(wire: Wire, kind: str, decide: Decide) -> dict[str, Any]:
    """Turn 1 interrupts; decide, save, resume with tools built anew until done."""
    ran: Counter[tuple[str, str]] = Counter()
    model = wire.model()
    wire.script(MIXED, AGAIN, None)
    agent = Agent(name="a", model=model, tools=_build(kind, ran))
    result = await Runner.run(agent, "go")
    rounds = [_pending(result)]
    ran_before = [dict(ran)]
    while result.interruptions:
        saved = result.to_state().to_json()
        json.dumps(saved)  # serialisable as it is
        again = Agent(name="a", model=model, tools=_build(kind, ran))
        state = await RunState.from_json(again, saved)
        for item in state.get_interruptions():
            decide(state, item)
        result = await Runner.run(again, state)
        rounds.append(_pending(result))
        ran_before.append(dict(ran))
        assert len(rounds) < 5, rounds
    return {
        "rounds": rounds,
        "ran": ran_before,
        "final": result.final_output,
        "sent": wire.sent(),
    }


@pytest.mark.parametrize("kind", ["declared", "undeclared"])
@pytest.mark.parametrize("decision", list(DECISIONS))
async def test_approval_and_resume_as_with_the_bare_tools(
    wire: Wire, kind: str, decision: str
) -> None:
    expected = await _approval_run(wire, "plain", DECISIONS[decision])
    wire.server.requests.clear()
    got = await _approval_run(wire, kind, DECISIONS[decision])
    assert got == expected
    # what the bare run does, spelled out: the first turn stops at the four asks
    asked = [(name, call_id) for name, call_id, _ in expected["rounds"][0]]
    assert asked == [("write", "t0c1"), ("drop", "t0c2"), ("manual", "t0c4")]
    first = expected["ran"][0]
    assert first == {("read", "a"): 1, ("drop", "b"): 1, ("read", "b"): 1}
    assert expected["final"] == "done"
    final_ran = expected["ran"][-1]
    for key in (("read", "a"), ("drop", "b"), ("read", "b")):
        assert final_ran[key] == 1  # never run twice by a resume
    approved_write = decision in ("approve", "mixed", "always")
    assert final_ran.get(("write", "a"), 0) == int(approved_write)
    assert final_ran.get(("drop", "x1"), 0) == int(decision == "approve")


async def test_rejected_calls_get_the_sdks_rejection_text_and_approved_run_in_place(
    wire: Wire,
) -> None:
    got = await _approval_run(wire, "declared", _mixed)
    # the request after the resume: one output per call of turn 0 (the SDK
    # sends the calls that ran in the first turn first, then the decided ones)
    turn0 = next(s for s in got["sent"] if s and s[0][0] == "t0c0")
    assert sorted(call_id for call_id, _ in turn0) == [f"t0c{i}" for i in range(6)]
    outputs = dict(turn0)
    assert outputs["t0c1"] == "wrote a"
    assert outputs["t0c2"] == "no t0c2, said ann"
    assert outputs["t0c4"] == "manual m"
    assert outputs["t0c3"] == "dropped b"


# -- the schedule still holds for the calls that run on resume -------------------------


def _probe_tools(probe: Probe) -> list[FunctionTool]:
    @function_tool(needs_approval=True)
    async def read(name: str) -> str:
        """Read (asks)."""
        return await probe.read(name)

    @function_tool(needs_approval=True)
    async def write(name: str) -> str:
        """Write (asks)."""
        return await probe.write(name)

    return [read, write]


async def test_approved_calls_keep_the_schedule_on_resume(wire: Wire) -> None:
    """r, r, W, r, r all wait for approval; approved, the reads of a pair meet
    (a rendezvous: no overlap fails) and W runs alone after the first pair."""
    probe = Probe()
    wire.script([(tool, {"name": arg}) for tool, arg in SCENARIO], None)
    agent = Agent(
        name="a",
        model=wire.model(),
        tools=scheduled_tools(_probe_tools(probe), DECLARATIONS),
    )
    first = await Runner.run(agent, "go")
    assert len(first.interruptions) == 5
    assert probe.log == []
    state = await RunState.from_json(agent, first.to_state().to_json())
    for item in first.interruptions:
        state.approve(item)
    result = await Runner.run(agent, state)
    assert result.final_output == "done"
    probe.check()
    [_, resumed] = wire.sent()
    assert [call_id for call_id, _ in resumed] == [f"t0c{i}" for i in range(5)]


async def test_without_toolweave_the_approved_write_overlaps_the_reads(
    wire: Wire,
) -> None:
    """The baseline the test above is measured against: the bare SDK runs the
    approved write beside the reads (so `probe.check` can fail)."""
    probe = Probe()
    wire.script([(tool, {"name": arg}) for tool, arg in SCENARIO], None)
    agent = Agent(name="a", model=wire.model(), tools=_probe_tools(probe))
    first = await Runner.run(agent, "go")
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    await Runner.run(agent, state)
    at = {event: i for i, event in enumerate(probe.log)}
    assert at["start", "W"] < min(at["end", name] for name in "abcd")
    with pytest.raises(AssertionError):
        probe.check()


async def test_a_call_after_a_waiting_write_is_not_held(wire: Wire) -> None:
    """The documented limit: the SDK never hands the waiting call to its tool, so
    a later call that conflicts with it runs in the first turn, as without
    toolweave (toolweave's own suspend would hold it, docs/human-in-the-loop.md)."""
    ran: Counter[tuple[str, str]] = Counter()
    wire.script([("write", {"key": "a"}), ("read", {"key": "a"})], None)
    tools = scheduled_tools(_tools(ran), APPROVAL_DECLARATIONS)
    first = await Runner.run(Agent(name="a", model=wire.model(), tools=tools), "go")
    assert [i.name for i in first.interruptions] == ["write"]
    assert ran == {("read", "a"): 1}


async def test_an_always_approved_tool_runs_without_asking_in_later_turns(
    wire: Wire,
) -> None:
    got = await _approval_run(wire, "declared", _always)
    # turn 0 asks three times; after the decisions turn 1's write does not ask,
    # its drop is rejected without asking (always_reject), so one resume is enough
    assert [len(r) for r in got["rounds"]] == [3, 0]
    assert got["ran"][-1][("write", "c")] == 1
    assert ("drop", "x2") not in got["ran"][-1]


async def test_read_only_tools_that_ask_overlap_once_approved(wire: Wire) -> None:
    """Two approved calls of a read-only tool run at once (a rendezvous)."""
    probe = Probe()
    wire.script([("read", {"name": "a"}), ("read", {"name": "b"})], None)
    tools = scheduled_tools(_probe_tools(probe), {"read": READ_ONLY})
    agent = Agent(name="a", model=wire.model(), tools=tools)
    first = await Runner.run(agent, "go")
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    assert (await Runner.run(agent, state)).final_output == "done"
    at = {event: i for i, event in enumerate(probe.log)}
    assert max(at["start", "a"], at["start", "b"]) < min(at["end", "a"], at["end", "b"])
