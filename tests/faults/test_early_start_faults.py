"""Fault table: a call starts while its response streams, then the response fails.

Each row streams a real provider response through the official SDK (Anthropic
Messages, OpenAI Chat Completions) from a loopback server, holds it once a tool
call has streamed until the call has run (a rendezvous: the stream cannot end
before the tool ran), then breaks it the row's way. Every run is recorded in a
SQLite session store on disk. Each row checks the three records against what
happened: the transcript (what the model is told), the events (every start has
one end; a result once reported is the one the transcript keeps) and the store.
docs/faults.md states the same rows for users.

| fault after the early start | the call that ran is told as                          |
|-----------------------------|-------------------------------------------------------|
| response cut at max_tokens  | its own result, in the truncated response's answers   |
| stream dropped, retried     | a note with its result in the next user message       |
| retried, then a final answer| a Warning event; the store keeps it (DISCARDED + result)|
| interrupted mid-stream      | the response as far as it streamed, with its result   |
| MCP readOnlyHint, untrusted | never started early: truncated, it never ran at all   |
| MCP readOnlyHint, trusted   | started early: truncated, its result is kept          |
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from early_start_support import (
    HeldSse,
    Recorded,
    Wire,
    assert_events_paired,
    drive,
    held,
    last_ready,
    recorded,
    results_in,
)
from models_loopback import LoopbackServer, SseReply

import toolweave as tw
from toolweave.events import (
    Retry,
    TextDelta,
    ToolResultReady,
    ToolUseStarted,
)
from toolweave.events import Warning as WarningEvent
from toolweave.loop import transcript_problems
from toolweave.models import AnthropicModel, Model, OpenAIChatModel, RetryPolicy
from toolweave.scheduling import classify, starts_early
from toolweave.sessions import CallRecord, CallState
from toolweave.tools.mcp import MCPServerConfig, open_mcp_servers

pytestmark = [
    pytest.mark.anyio,
    # Under trio the SDKs drop their own internal async generators unfinished (their
    # bug, not ours: our generators are closed); trio reports them when collected.
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio on its real clock.

    The official SDKs and MCP servers wait on real sockets and pipes: under
    trio's autojumping MockClock every such wait would let virtual time jump to
    the next deadline. Nothing here asserts a duration.
    """
    return request.param


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A scripted provider endpoint; fails the test on an unscripted request."""
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, f"unscripted requests: {loopback.unexpected}"
    assert not loopback.errors, f"the loopback server failed: {loopback.errors}"


PROVIDERS = ["anthropic", "openai_chat"]
CALL_ID = {"anthropic": "toolu_early", "openai_chat": "call_early"}
CUT_ID = {"anthropic": "toolu_cut", "openai_chat": "call_note"}
NO_WAIT = RetryPolicy(initial_delay=0.0, jitter=0.0)
LIAR = Path(__file__).with_name("liar_mcp_server.py")


def _model(provider: str, url: str) -> Model:
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-6", api_key="test-key", base_url=url)
    return OpenAIChatModel("gpt-4.1", api_key="test-key", base_url=url + "/v1")


def _tools(reply: HeldSse, ran: list[str]) -> list[tw.Tool]:
    """probe: yours, SAFE (starts early) and lets the held stream go on; note: SEQUENTIAL."""

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda args: tw.Access())
    async def probe(tag: str) -> str:
        """Look at something."""
        ran.append(tag)
        reply.hold.set()
        return f"probed {tag}"

    @tw.tool
    async def note(text: str) -> str:
        """Write a note (waits for the final response)."""
        ran.append(f"note {text}")
        return "noted"

    return [probe, note]


@asynccontextmanager
async def _agent(
    provider: str, server: LoopbackServer, tools: list[tw.Tool]
) -> AsyncIterator[tw.Agent]:
    model = _model(provider, server.url)
    agent = tw.Agent(model, tools, config=tw.AgentConfig(retry=NO_WAIT))
    try:
        yield agent
    finally:
        await agent.aclose()
        await model.aclose()


def _only(record: Recorded, call_id: str) -> CallRecord:
    [found] = [c for c in record.calls() if c.call.id == call_id]
    return found


def _check_records(record: Recorded, result: tw.RunResult) -> None:
    """Events paired, the transcript valid, and the store's transcript the run's."""
    assert_events_paired(record.events)
    assert transcript_problems(result.messages) == []
    assert record.store.messages(record.recorder.session_id) == list(result.messages)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_early_call_then_the_response_is_cut_at_max_tokens(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    """The call ran before the cut: it is answered with its own result, not "not run"."""
    wire = Wire(provider)
    reply = held(wire, [(CALL_ID[provider], "probe", {"tag": "a"})], "max_tokens")
    server.script(reply, SseReply(wire.text("shorter now")))
    ran: list[str] = []
    tools = _tools(reply, ran)
    record = recorded(tmp_path, tw.ToolRegistry(tools))
    async with _agent(provider, server, tools) as agent:
        result = await drive(agent, record)
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert ran == ["a"]  # once, before the cut; the cut call never ran
    answers = results_in(result.messages)
    early, cut = answers[CALL_ID[provider]], answers[CUT_ID[provider]]
    assert early == tw.ToolResult(CALL_ID[provider], "probed a")
    assert cut.is_error and cut.synthetic and "max_tokens" in cut.text
    [call] = [c for c in result.messages[1].tool_calls if c.id == CALL_ID[provider]]
    assert last_ready(record.events, call.ref) == early  # never contradicted
    stored = _only(record, CALL_ID[provider])
    assert stored.state is CallState.FINISHED and stored.result == early
    assert stored.running_at is not None
    _check_records(record, result)
    follow_up = json.dumps(server.requests[1].body)
    assert "probed a" in follow_up  # what the model was sent


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_early_call_then_the_stream_drops_and_is_retried(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    """The dead attempt's call ran: the next user message tells the model what it did."""
    wire = Wire(provider)
    reply = held(wire, [(CALL_ID[provider], "probe", {"tag": "a"})], "cut")
    live, _ = wire.calls_then([], "tool_use")  # the retry: text, then note(x)
    server.script(reply, SseReply(live), SseReply(wire.text("done")))
    ran: list[str] = []
    tools = _tools(reply, ran)
    record = recorded(tmp_path, tw.ToolRegistry(tools))
    async with _agent(provider, server, tools) as agent:
        result = await drive(agent, record)
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert ran == ["a", "note x"]
    assert [type(e) for e in record.events].count(Retry) == 1
    calls = [c.id for m in result.messages for c in m.tool_calls]
    assert CALL_ID[provider] not in calls  # the dead attempt is in no transcript
    answers = result.messages[2]
    [noted] = answers.tool_results
    assert noted.content == "noted"
    [told] = [b for b in answers.blocks if isinstance(b, tw.Text)]
    assert "discarded" in told.text and "probed a" in told.text
    assert "probed a" in json.dumps(server.requests[2].body)  # the model was sent it
    dead = _only(record, CALL_ID[provider])
    assert dead.state is CallState.DISCARDED  # its response was thrown away ...
    assert dead.running_at is not None  # ... but it ran, and the store says what it did
    assert dead.result == tw.ToolResult(CALL_ID[provider], "probed a")
    _check_records(record, result)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_early_call_then_a_retry_that_ends_the_run(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    """No later message can tell the model: a Warning says so, the store keeps the call."""
    wire = Wire(provider)
    reply = held(wire, [(CALL_ID[provider], "probe", {"tag": "a"})], "cut")
    server.script(reply, SseReply(wire.text("done")))
    ran: list[str] = []
    tools = _tools(reply, ran)
    record = recorded(tmp_path, tw.ToolRegistry(tools))
    async with _agent(provider, server, tools) as agent:
        result = await drive(agent, record)
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert ran == ["a"]
    assert [m.role for m in result.messages] == ["user", "assistant"]
    warnings = [e.message for e in record.events if isinstance(e, WarningEvent)]
    assert any(
        "ended before the model was told" in w and "probed a" in w for w in warnings
    )
    dead = _only(record, CALL_ID[provider])
    assert dead.state is CallState.DISCARDED and dead.running_at is not None
    assert dead.result == tw.ToolResult(CALL_ID[provider], "probed a")
    _check_records(record, result)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_interrupt_after_an_early_call_reported_its_result(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    """The result was reported: the transcript keeps the response so far and that result."""
    wire = Wire(provider)
    reply = held(wire, [(CALL_ID[provider], "probe", {"tag": "a"})], "tool_use")
    server.script(reply)
    ran: list[str] = []
    tools = _tools(reply, ran)
    tools[0] = _nonreleasing_probe(ran)  # the stream stays open until the interrupt
    record = recorded(tmp_path, tw.ToolRegistry(tools))

    async def interrupt_once_ready(run: tw.AgentRun) -> None:
        await record.wait_for(ToolResultReady).wait()
        run.interrupt()

    try:
        async with _agent(provider, server, tools) as agent:
            result = await drive(agent, record, during=interrupt_once_ready)
    finally:
        reply.hold.set()  # let the server's thread end
    assert result.completion_reason is tw.CompletionReason.INTERRUPTED
    assert ran == ["a"]
    prompt, partial, answers = result.messages
    assert prompt.role == "user" and partial.role == "assistant"
    assert [c.id for c in partial.tool_calls] == [CALL_ID[provider]]
    [answer] = answers.tool_results
    assert answer == tw.ToolResult(CALL_ID[provider], "probed a")
    assert last_ready(record.events, partial.tool_calls[0].ref) == answer
    stored = _only(record, CALL_ID[provider])
    assert stored.state is CallState.FINISHED and stored.result == answer
    _check_records(record, result)


def _nonreleasing_probe(ran: list[str]) -> tw.Tool:
    @tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda args: tw.Access())
    async def probe(tag: str) -> str:
        """Look at something."""
        ran.append(tag)
        return f"probed {tag}"

    return probe


# -- an MCP server's readOnlyHint is a hint -----------------------------------------


def _liar(*, trusted: bool) -> MCPServerConfig:
    return MCPServerConfig(
        name="liar", command=sys.executable, args=(str(LIAR),), trusted=trusted
    )


@pytest.mark.mcp
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
async def test_an_mcp_tool_claiming_read_only_starts_early_only_if_trusted(
    provider: str, trusted: bool, server: LoopbackServer, tmp_path: Path
) -> None:
    """Untrusted, it waits for the final response (cut: it never runs); trusted, it starts."""
    marker = tmp_path / "written.txt"
    wire = Wire(provider)
    call = (CALL_ID[provider], "mcp__liar__peek", {"path": str(marker)})
    reply = held(wire, [call], "max_tokens")
    server.script(reply, SseReply(wire.text("fine")))

    async def watch_the_stream(run: tw.AgentRun) -> None:
        if trusted:  # it starts early and writes; then the stream goes on
            await record.wait_for(ToolResultReady).wait()
            assert marker.exists()
        else:  # the call arrived (text followed it), everything settled: nothing ran
            await record.wait_for(TextDelta).wait()
            await anyio.wait_all_tasks_blocked()
            assert not any(isinstance(e, ToolUseStarted) for e in record.events)
            assert not marker.exists()
        reply.hold.set()

    try:
        async with open_mcp_servers([_liar(trusted=trusted)]) as mcp:
            registry = tw.ToolRegistry(mcp.tools)
            [peek] = mcp.tools
            plan = classify(tw.ToolCall("x", peek.name, {"path": "p"}), registry)
            assert plan.parallel_ok  # it may overlap inside a final response, as before
            assert starts_early(plan) is trusted
            record = recorded(tmp_path, registry)
            async with _agent(provider, server, list(mcp.tools)) as agent:
                result = await drive(agent, record, during=watch_the_stream)
    finally:
        reply.hold.set()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    answer = results_in(result.messages)[CALL_ID[provider]]
    if trusted:
        assert answer.text == f"peeked at {marker}" and not answer.is_error
        assert marker.read_text() == "written by a read-only tool\n"  # once
    else:
        assert answer.is_error and "max_tokens" in answer.text
        assert not marker.exists()  # a truncated response ran nothing on a hint
    _check_records(record, result)
