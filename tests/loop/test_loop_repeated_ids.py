"""Ids are not keys of truth: repeated call ids through the whole agent.

Models repeat ids — two calls with one id in a response, and ``call_0`` in every
response (common with local OpenAI-compatible servers). Each call must still get
its own result (never another call's large-result preview), its own saved file
and its own events, the transcript must stay valid for a later run, and what a
provider is sent must have unique ids with every result paired to its call.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolweave as tw
from toolweave._exceptions import OverloadedError
from toolweave.events import RunFinished, ToolResultReady, ToolRunning, ToolUseStarted
from toolweave.loop import transcript_problems
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import RetryPolicy, ScriptedModel, ScriptStep, unique_call_ids
from toolweave.tools import Access, Concurrency, SessionState

pytestmark = pytest.mark.anyio

BIG = 3_000  # over the tool's max_result_chars below: persisted with a preview


def _tools(seen: list[str]) -> list[tw.tools.Tool]:
    @tw.tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(), max_result_chars=1000
    )
    async def fetch(tag: str, size: int) -> str:
        """Return `size` characters that start with the tag."""
        seen.append(tag)
        return (f"<{tag}>" + "." * size)[:size] if size > len(tag) + 2 else f"<{tag}>"

    return [fetch]


def use(*calls: ToolCall) -> ModelResponse:
    return ModelResponse(calls, StopReason.TOOL_USE, Usage(10, 5))


def fetch(call_id: str, tag: str, size: int) -> ToolCall:
    return ToolCall(call_id, "fetch", {"tag": tag, "size": size})


SCENARIOS = {
    "same id twice in one response, large first": [
        use(fetch("call_0", "a", BIG), fetch("call_0", "b", 10)),
    ],
    "same id twice in one response, large second": [
        use(fetch("call_0", "a", 10), fetch("call_0", "b", BIG)),
    ],
    "call_0 in every turn, large on the first": [
        use(fetch("call_0", "a", BIG)),
        use(fetch("call_0", "b", 10)),
        use(fetch("call_0", "c", BIG)),
    ],
    "both at once, every turn": [
        use(fetch("call_0", "a", BIG), fetch("call_0", "b", 10)),
        use(fetch("call_0", "c", 10), fetch("call_0", "d", BIG)),
    ],
}


def _expected(turns: list[ModelResponse]) -> list[tuple[str, int]]:
    return [(c.input["tag"], c.input["size"]) for t in turns for c in t.tool_calls]


@pytest.mark.parametrize("overlap", [True, False], ids=["streaming", "batch"])
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_every_call_gets_its_own_result(
    tmp_path: Path, name: str, overlap: bool
) -> None:
    turns = SCENARIOS[name]
    model = ScriptedModel([*turns, ModelResponse([Text("done")])])
    seen: list[str] = []
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
    config = tw.AgentConfig(concurrency=tw.ConcurrencyConfig(streaming_overlap=overlap))
    agent = tw.Agent(model, _tools(seen), config=config, state=state)
    events: list[object] = []
    try:
        async for event in agent.run_stream("go"):
            events.append(event)
    finally:
        await agent.aclose()
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.reason is tw.CompletionReason.COMPLETED
    messages = finished.messages

    expected = _expected(turns)
    assert sorted(seen) == sorted(tag for tag, _ in expected)  # each call ran once
    saved = {str(p): p.read_text() for p in (tmp_path / "results").rglob("*.txt")}
    assert len(saved) == sum(1 for _, size in expected if size == BIG)
    answered = [r for m in messages for r in m.tool_results]
    assert len(answered) == len(expected)
    for answer, (tag, size) in zip(answered, expected, strict=True):
        assert answer.call_id == "call_0"  # the transcript keeps the model's id
        assert f"<{tag}>" in answer.text  # its own output, or its own preview
        if size == BIG:
            assert answer.text.startswith("<persisted-output>")
            path = answer.text.split("saved to: ")[1].split("\n")[0]
            assert saved[path].startswith(f"<{tag}>")  # its own file
        else:
            assert answer.text == f"<{tag}>" + "." * (size - len(tag) - 2)
    assert transcript_problems(messages) == []

    # Events are keyed by position: one key per call, each started, run and finished once.
    keys = [e.call.key for e in events if isinstance(e, ToolUseStarted)]
    assert len(keys) == len(set(keys)) == len(expected)
    assert sorted(e.key for e in events if isinstance(e, ToolRunning)) == sorted(keys)
    ready = {e.call.key: e.result for e in events if isinstance(e, ToolResultReady)}
    assert set(ready) == set(keys)

    # The model was sent every earlier result as the transcript holds it; on the
    # wire (any provider converter) the ids become unique and still pair up.
    last = model.requests[-1].messages
    wire = unique_call_ids(last)
    call_ids = [c.id for m in wire for c in m.tool_calls]
    result_ids = [r.call_id for m in wire for r in m.tool_results]
    assert len(set(call_ids)) == len(call_ids) == len(expected)
    assert result_ids == call_ids


async def test_a_transcript_with_repeated_ids_is_valid_history(tmp_path: Path) -> None:
    """A later run continues from it (the stored transcript of a resumed session)."""
    turns = SCENARIOS["both at once, every turn"]
    first_model = ScriptedModel([*turns, ModelResponse([Text("done")])])
    agent = tw.Agent(first_model, _tools([]))
    first = await agent.run("go")
    assert first.completion_reason is tw.CompletionReason.COMPLETED
    again = ScriptedModel([use(fetch("call_0", "e", 10)), ModelResponse([Text("ok")])])
    second = await tw.Agent(again, _tools([])).run("more", history=first.messages)
    assert second.completion_reason is tw.CompletionReason.COMPLETED
    assert second.messages[: len(first.messages)] == first.messages
    assert [r.text for r in second.messages[-2].tool_results] == ["<e>" + "." * 7]


_ids = st.sampled_from(["call_0", "call_1", "toolu_1", ""])
_calls = st.lists(
    st.tuples(_ids, st.sampled_from([10, BIG]), st.booleans()), min_size=1, max_size=4
)


@settings(max_examples=25, deadline=None)
@given(turns=st.lists(_calls, min_size=1, max_size=3), overlap=st.booleans())
async def test_property_any_ids_every_result_its_own(
    anyio_backend: object, turns: list[list[tuple[str, int, bool]]], overlap: bool
) -> None:
    """Random turns of random ids (repeated, reused, empty), large and small
    results, parallel-safe and exclusive tools: every result is its call's own,
    the transcript is valid, and the wire ids are unique and paired."""
    seen: list[str] = []
    counter = iter(range(1_000))
    script = [
        use(
            *(
                ToolCall(
                    call_id,
                    "fetch" if safe else "store",
                    {"tag": f"t{next(counter)}", "size": size},
                )
                for call_id, size, safe in calls
            )
        )
        for calls in turns
    ]
    (fetch_tool,) = _tools(seen)

    @tw.tool(max_result_chars=1000)
    async def store(tag: str, size: int) -> str:
        """Like fetch, but exclusive (SEQUENTIAL)."""
        seen.append(tag)
        return (f"<{tag}>" + "." * size)[:size] if size > len(tag) + 2 else f"<{tag}>"

    model = ScriptedModel([*script, ModelResponse([Text("done")])])
    config = tw.AgentConfig(concurrency=tw.ConcurrencyConfig(streaming_overlap=overlap))
    agent = tw.Agent(model, [fetch_tool, store], config=config)
    try:
        result = await agent.run("go")
    finally:
        await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    expected = _expected(script)
    assert sorted(seen) == sorted(tag for tag, _ in expected)
    answered = [r for m in result.messages for r in m.tool_results]
    calls = [c for m in result.messages for c in m.tool_calls]
    assert [r.call_id for r in answered] == [c.id for c in calls]
    for answer, (tag, size) in zip(answered, expected, strict=True):
        assert f"<{tag}>" in answer.text
        assert answer.text.startswith("<persisted-output>") == (size == BIG)
    assert transcript_problems(result.messages) == []
    wire = unique_call_ids(result.messages)
    wire_calls = [c.id for m in wire for c in m.tool_calls]
    assert len(set(wire_calls)) == len(wire_calls) and all(wire_calls)
    assert [r.call_id for m in wire for r in m.tool_results] == wire_calls


async def test_a_retried_stream_never_lends_its_preview_to_the_retry() -> None:
    """The dead attempt's early call (same id, same position) ran and was persisted;
    the live attempt's call is a different call and keeps its own small result."""
    outputs = iter([("<dead>" + "." * BIG), "<live>"])

    @tw.tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(), max_result_chars=1000
    )
    async def fetch() -> str:
        """Returns the next canned output (the dead attempt's is large)."""
        return next(outputs)

    dying = ModelResponse(
        [ToolCall("call_0", "fetch", {}), Text("x" * 60)], StopReason.TOOL_USE
    )
    model = ScriptedModel(
        [
            ScriptStep(
                dying,
                chunk_delay=0.001,
                text_chunk_chars=1,
                fail_after_chunks=50,
                error=OverloadedError("cut"),
            ),
            use(ToolCall("call_0", "fetch", {})),
            ModelResponse([Text("done")]),
        ]
    )
    config = tw.AgentConfig(retry=RetryPolicy(initial_delay=0.0, jitter=0.0))
    agent = tw.Agent(model, [fetch], config=config)
    events: list[object] = []
    try:
        async for event in agent.run_stream("go"):
            events.append(event)
    finally:
        await agent.aclose()
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.reason is tw.CompletionReason.COMPLETED
    ready = {
        e.call.key: e.result.text for e in events if isinstance(e, ToolResultReady)
    }
    # The dead attempt's call ran to its end (BLOCK) and was persisted; the retry's
    # call at the same position has a key of its own.
    assert set(ready) == {"1.0", "1~2.0"}
    assert ready["1.0"].startswith("<persisted-output>")
    assert ready["1~2.0"] == "<live>"
    (answer,) = [r for m in finished.messages for r in m.tool_results]
    assert answer.text == "<live>"
