"""Streaming tool overlap, end to end: early starts proved by rendezvous, identical transcripts."""

from __future__ import annotations

import json
import pickle
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from loop_support import (
    assert_provider_valid,
    call,
    config,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave._exceptions import OverloadedError
from toolweave.events import (
    CompletionReason,
    ModelCallFinished,
    ModelCallStarted,
    ToolResultReady,
    ToolUseStarted,
)
from toolweave.loop import Agent
from toolweave.messages import (
    ModelResponse,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from toolweave.models import (
    Model,
    ModelRequest,
    RetryPolicy,
    ScriptStep,
    StreamChunk,
    StreamEnd,
    TextChunk,
    ToolUseReady,
)
from toolweave.models._anthropic_convert import anthropic_messages
from toolweave.scheduling import ConcurrencyConfig
from toolweave.tools import Access, Concurrency, Interrupt, Tool, tool

pytestmark = pytest.mark.anyio


def kv_tools(store: dict[str, str], log: list[str]) -> list[Tool]:
    """A shared key-value store: reads are SAFE, writes SEQUENTIAL (declared keys)."""

    @tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(reads=[f"kv:{a['key']}"])
    )
    async def get(key: str, delay: float = 0.0) -> str:
        """Read a key."""
        await anyio.sleep(delay)
        log.append(f"get {key}")
        return store.get(key, "<missing>")

    @tool(access=lambda a: Access(writes=[f"kv:{a['key']}"]))
    async def put(key: str, value: str, delay: float = 0.0) -> str:
        """Write a key."""
        await anyio.sleep(delay)
        store[key] = value
        log.append(f"put {key}")
        return f"{key}={value}"

    return [get, put]


@pytest.fixture
def scale(anyio_backend: object) -> float:
    """Seconds per scripted second: virtual under trio, a little real time under asyncio."""
    return 1.0 if isinstance(anyio_backend, tuple) else 0.002


def kv_script(scale: float) -> list[Any]:
    def streamed(response: ModelResponse) -> ScriptStep:
        return ScriptStep(response, chunk_delay=0.5 * scale, text_chunk_chars=4)

    return [
        streamed(
            use(
                call("r1", "get", key="a", delay=2.0 * scale),
                call("r2", "get", key="b", delay=0.1 * scale),
                call("w1", "put", key="a", value="1", delay=0.3 * scale),
                call("r3", "get", key="a"),
                text="reading and writing",
            )
        ),
        streamed(
            use(
                call("r4", "get", key="b"),
                call("w2", "put", key="b", value="2"),
                call("r5", "get", key="b"),
            )
        ),
        streamed(say("a is 1 and b is 2")),
    ]


async def run_kv(
    concurrency: ConcurrencyConfig, scale: float
) -> tuple[Any, dict[str, str]]:
    store = {"a": "0", "b": "0"}
    log: list[str] = []
    model = scripted(*kv_script(scale))
    agent = Agent(model, kv_tools(store, log), config=config(concurrency=concurrency))
    result, _ = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    return result, store


async def test_streaming_transcript_is_byte_identical_to_batch(scale: float) -> None:
    overlap, store_o = await run_kv(ConcurrencyConfig(streaming_overlap=True), scale)
    batch, store_b = await run_kv(ConcurrencyConfig(streaming_overlap=False), scale)
    serial, store_s = await run_kv(ConcurrencyConfig(enabled=False), scale)
    assert overlap.messages == batch.messages == serial.messages
    assert (
        pickle.dumps(overlap.messages)
        == pickle.dumps(batch.messages)
        == pickle.dumps(serial.messages)
    )
    wire = [
        json.dumps(anthropic_messages(r.messages), sort_keys=True)
        for r in (overlap, batch, serial)
    ]
    assert wire[0] == wire[1] == wire[2]
    assert store_o == store_b == store_s == {"a": "1", "b": "2"}
    results = {r.call_id: r.content for r in overlap.messages[2].tool_results}
    assert results == {"r1": "0", "r2": "0", "w1": "a=1", "r3": "1"}
    assert_provider_valid(overlap.messages)


class RendezvousModel(Model):
    """Streams one tool call, then waits for `proceed` before ending the response."""

    def __init__(self, calls: list[ToolCall]) -> None:
        self.proceed = anyio.Event()
        self.ended = False
        self._calls = calls
        self._turn = 0

    @property
    def name(self) -> str:
        return "rendezvous"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self._turn += 1
        if self._turn > 1:
            yield TextChunk("done", block=0)
            yield StreamEnd(StopReason.END_TURN, Usage(1, 1))
            return
        for index, c in enumerate(self._calls):
            yield ToolUseReady(c, block=index)
        with anyio.fail_after(10):  # without overlap nothing would ever set it
            await self.proceed.wait()
        self.ended = True
        yield StreamEnd(StopReason.TOOL_USE, Usage(1, 1))


async def test_safe_calls_start_while_the_response_streams() -> None:
    model = RendezvousModel([call("p", "probe")])
    seen_stream_open: list[bool] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def probe() -> str:
        """Starts during the stream and lets it end."""
        seen_stream_open.append(not model.ended)
        model.proceed.set()
        return "probed"

    result, events = await run_collect(Agent(model, [probe]))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert seen_stream_open == [True]
    names = [type(e).__name__ for e in events]
    assert names.index("ToolUseStarted") < names.index("ModelCallFinished")
    assert_provider_valid(result.messages)


async def test_sequential_calls_wait_for_the_final_response() -> None:
    model = RendezvousModel([call("w", "write")])
    seen_stream_open: list[bool] = []

    @tool
    async def write() -> str:
        """A SEQUENTIAL tool."""
        seen_stream_open.append(not model.ended)
        return "written"

    async with anyio.create_task_group() as tg:

        async def drive() -> None:
            result, _ = await run_collect(Agent(model, [write]))
            assert result.completion_reason is CompletionReason.COMPLETED

        tg.start_soon(drive)
        await anyio.wait_all_tasks_blocked()
        assert seen_stream_open == []  # held back while the stream is open
        model.proceed.set()
    assert seen_stream_open == [False]


async def test_a_truncated_response_keeps_what_its_early_call_did(
    scale: float,
) -> None:
    ran: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def look(what: str) -> str:
        """A read that may start early."""
        ran.append(what)
        return f"saw {what}"

    @tool
    async def note(text: str) -> str:
        """SEQUENTIAL: it waits for the final response."""
        ran.append(text)
        return "noted"

    response = ModelResponse(
        [
            call("l1", "look", what="x"),
            Text("and then a very long" * 5),
            call("n1", "note", text="later"),
        ],
        StopReason.MAX_TOKENS,
    )
    model = scripted(
        ScriptStep(response, chunk_delay=0.2 * scale, text_chunk_chars=5),
        say("shorter now"),
    )
    result, events = await run_collect(Agent(model, [look, note]))
    assert result.completion_reason is CompletionReason.COMPLETED
    assert ran == ["x"]  # the early call ran; the held-back one never did
    looked, noted = result.messages[2].tool_results
    assert looked == ToolResult("l1", "saw x")  # told as it ran, not "not run"
    assert noted.is_error and noted.synthetic and "max_tokens" in noted.text
    ready = {e.call.id: e.result for e in events if isinstance(e, ToolResultReady)}
    assert ready == {"l1": looked, "n1": noted}
    for kind in (ToolUseStarted, ToolResultReady):  # one start, one end each
        assert sorted(e.call.id for e in events if isinstance(e, kind)) == [
            "l1",
            "n1",
        ]
    assert_provider_valid(result.messages)


async def test_overlap_hides_tool_latency_exactly(anyio_backend: object) -> None:
    if not isinstance(anyio_backend, tuple):
        pytest.skip("durations are asserted only under trio's MockClock")

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def fetch() -> str:
        """Takes 8 s."""
        await anyio.sleep(8.0)
        return "fetched"

    def turn(overlap: bool) -> Agent:
        response = ModelResponse(
            [call("f", "fetch"), Text("x" * 10)], StopReason.TOOL_USE, Usage(1, 1)
        )
        model = scripted(
            ScriptStep(response, chunk_delay=1.0, text_chunk_chars=1), say("ok")
        )
        return Agent(
            model,
            [fetch],
            config=config(concurrency=ConcurrencyConfig(streaming_overlap=overlap)),
        )

    async def first_turn(agent: Agent) -> float:
        _, events = await run_collect(agent)
        start = next(e.at for e in events if isinstance(e, ModelCallStarted))
        end = next(e.at for e in events if isinstance(e, ToolResultReady))
        stream_end = next(e.at for e in events if isinstance(e, ModelCallFinished))
        assert stream_end - start == 11.0  # tool call, 10 text chunks, end: 1 s apart
        return max(end, stream_end) - start

    assert (
        await first_turn(turn(overlap=True)) == 11.0
    )  # max(stream 11 s, tool 0 + 8 s)
    assert await first_turn(turn(overlap=False)) == 19.0  # stream, then the tool


async def test_events_report_tool_use_in_call_order(scale: float) -> None:
    store: dict[str, str] = {}
    model = scripted(*kv_script(scale))
    _result, events = await run_collect(Agent(model, kv_tools(store, [])))
    first_batch = [
        e.call.id for e in events if isinstance(e, ToolUseStarted) and e.iteration == 1
    ]
    assert first_batch == ["r1", "r2", "w1", "r3"]
    done = [
        e.result.call_id
        for e in events
        if isinstance(e, ToolResultReady) and e.iteration == 1
    ]
    assert sorted(done) == ["r1", "r2", "r3", "w1"]
    if scale == 1.0:  # virtual time (trio): r2 (0.1 s) finishes before r1 (2 s)
        assert done.index("r2") < done.index("r1")


def started_before_response_final(events: list[Any]) -> bool:
    names = [type(e).__name__ for e in events]
    return names.index("ToolUseStarted") < names.index("ModelCallFinished")


async def test_a_response_that_arrives_in_one_piece_opens_no_streaming_batch() -> None:
    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def look() -> str:
        """A read."""
        return "seen"

    def agent(step: Any) -> Agent:
        return Agent(scripted(step, say("ok")), [look])

    _, whole = await run_collect(agent(use(call("l", "look"))))
    assert not started_before_response_final(whole)  # nothing could have run earlier
    streamed = ScriptStep(
        ModelResponse([call("l", "look"), Text("x" * 50)], StopReason.TOOL_USE),
        chunk_delay=0.0005,  # 50 waits: ample for the batch to open and admit
        text_chunk_chars=1,
    )
    result, events = await run_collect(agent(streamed))
    assert started_before_response_final(events)  # the loop waited: the call started
    assert result.completion_reason is CompletionReason.COMPLETED


async def test_a_sequential_first_call_holds_back_the_rest() -> None:
    order: list[str] = []

    @tool
    async def write() -> str:
        """SEQUENTIAL."""
        order.append("write")
        return "w"

    @tool(concurrency=Concurrency.SAFE)  # reads everything: waits for the barrier
    async def look() -> str:
        """SAFE, but behind a SEQUENTIAL call."""
        order.append("look")
        return "l"

    response = ModelResponse(
        [call("w", "write"), call("l", "look"), Text("trailing text")],
        StopReason.TOOL_USE,
    )
    model = scripted(
        ScriptStep(response, chunk_delay=0.001, text_chunk_chars=3), say("ok")
    )
    result, events = await run_collect(Agent(model, [write, look]))
    assert not started_before_response_final(events)
    assert order == ["write", "look"]
    assert_provider_valid(result.messages)


async def test_a_retried_stream_cancels_its_early_calls(scale: float) -> None:
    started: list[str] = []
    finished: list[str] = []

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(),
        interrupt=Interrupt.CANCEL,
    )
    async def slow(tag: str) -> str:
        """Runs until cancelled, unless it is the live attempt's call."""
        started.append(tag)
        if tag == "dead":
            await anyio.sleep_forever()
        finished.append(tag)
        return f"{tag} ok"

    dying = ModelResponse(
        [call("d", "slow", tag="dead"), Text("x" * 60)], StopReason.TOOL_USE
    )
    model = scripted(
        ScriptStep(
            dying,
            chunk_delay=0.01 * scale,
            text_chunk_chars=1,
            fail_after_chunks=50,  # 49 waits: ample for the early start
            error=OverloadedError("cut"),
        ),
        use(call("v", "slow", tag="live")),
        say("done"),
    )
    agent = Agent(
        model, [slow], config=config(retry=RetryPolicy(initial_delay=0.0, jitter=0.0))
    )
    result, _events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    assert started == ["dead", "live"] and finished == ["live"]
    assert [r.call_id for r in result.messages[2].tool_results] == ["v"]
    assert_provider_valid(result.messages)


async def test_interrupt_while_early_calls_run_during_the_stream_records_them() -> None:
    started = anyio.Event()
    cancelled: list[bool] = []

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(),
        interrupt=Interrupt.CANCEL,
    )
    async def watch() -> str:
        """Runs until cancelled."""
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        return "never"

    response = ModelResponse([call("w", "watch"), Text("x" * 100)], StopReason.TOOL_USE)
    model = scripted(ScriptStep(response, chunk_delay=1.0, text_chunk_chars=1))
    async with Agent(model, [watch]).open_run("go") as run:
        await started.wait()
        run.interrupt()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.INTERRUPTED
    assert cancelled == [True]
    # The call had started: the response as far as it streamed is recorded,
    # and the call is answered as an interrupted batch answers it.
    _prompt, partial, answers = run.result.messages
    assert partial.role == "assistant" and [c.id for c in partial.tool_calls] == ["w"]
    [answer] = answers.tool_results
    assert answer.is_error and "effects it had are unknown" in answer.text
    assert_provider_valid(run.result.messages)


async def test_the_wall_clock_ending_the_stream_keeps_what_its_early_call_did(
    anyio_backend: object,
) -> None:
    """The budget abandons the model call; a call that ran early is still recorded."""
    ran: list[str] = []

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def look(what: str) -> str:
        """A read that may start early."""
        ran.append(what)
        return f"saw {what}"

    @tool
    async def note(text: str) -> str:
        """SEQUENTIAL: it waits for the final response, which never comes."""
        ran.append(text)
        return "noted"

    virtual = isinstance(anyio_backend, tuple)
    response = ModelResponse(
        [call("l1", "look", what="x"), call("n1", "note", text="y"), Text("z" * 50)],
        StopReason.TOOL_USE,
    )
    step = ScriptStep(response, chunk_delay=1.0 if virtual else 0.2, text_chunk_chars=1)
    agent = Agent(
        scripted(step),
        [look, note],
        config=config(max_wall_clock=5.0 if virtual else 1.0),
    )
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    assert ran == ["x"]
    _prompt, partial, answers = result.messages
    assert [c.id for c in partial.tool_calls] == ["l1", "n1"]
    looked, noted = answers.tool_results
    assert looked == ToolResult("l1", "saw x")
    assert noted.is_error and noted.text.startswith("Not run")
    ready = {e.call.id: e.result for e in events if isinstance(e, ToolResultReady)}
    assert ready == {"l1": looked, "n1": noted}
    assert_provider_valid(result.messages)
