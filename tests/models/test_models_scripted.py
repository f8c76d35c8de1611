"""ScriptedModel: strict script, exact stream timing in virtual time."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolweave import ModelConnectionError, RateLimitedError, UnexpectedModelCallError
from toolweave.messages import (
    Message,
    ModelResponse,
    StopReason,
    Text,
    Thinking,
    ToolCall,
)
from toolweave.models import (
    ModelRequest,
    ReasoningChunk,
    ScriptedModel,
    ScriptStep,
    StreamChunk,
    StreamEnd,
    TextChunk,
    ToolUseReady,
)

pytestmark = pytest.mark.anyio

HELLO = ModelRequest([Message("user", "hi")])


async def test_an_unexpected_call_names_its_number() -> None:
    model = ScriptedModel([ModelResponse([Text("one")])], name="demo")
    await model.complete(HELLO)
    with pytest.raises(UnexpectedModelCallError, match=r"unexpected call #2"):
        await model.complete(HELLO)


async def test_assert_complete_reports_unused_responses() -> None:
    model = ScriptedModel([ModelResponse([Text("a")]), ModelResponse([Text("b")])])
    await model.complete(HELLO)
    with pytest.raises(AssertionError, match="1 scripted response"):
        model.assert_complete()
    await model.complete(HELLO)
    model.assert_complete()


async def test_function_steps_see_the_request() -> None:
    model = ScriptedModel(
        [lambda request: ModelResponse([Text(request.messages[-1].text.upper())])]
    )
    response = await model.complete(HELLO)
    assert response.text == "HI"
    assert model.requests == [HELLO]


async def test_stream_delays_are_exact_under_mock_clock(anyio_backend: Any) -> None:
    trio_clock = not isinstance(anyio_backend, str)
    unit = 1.0 if trio_clock else 0.001  # asyncio: real time, so milliseconds
    response = ModelResponse(
        [Thinking("hmm", "sig"), Text("abc"), ToolCall("c1", "read", {"path": "x"})],
        StopReason.TOOL_USE,
    )
    step = ScriptStep(
        response,
        first_chunk_delay=2.0 * unit,
        chunk_delay=0.5 * unit,
        text_chunk_chars=1,
    )
    model = ScriptedModel([step])
    start = anyio.current_time()
    seen = []
    async for chunk in model.stream(HELLO):
        seen.append((anyio.current_time() - start, chunk))
    assert [chunk for _, chunk in seen] == [
        ReasoningChunk("hmm", block=0, signature="sig"),
        TextChunk("a", block=1),
        TextChunk("b", block=1),
        TextChunk("c", block=1),
        ToolUseReady(ToolCall("c1", "read", {"path": "x"}), block=2),
        StreamEnd(StopReason.TOOL_USE),
    ]
    if trio_clock:  # virtual time: exact
        assert [t for t, _ in seen] == [2.0, 2.5, 3.0, 3.5, 4.0, 4.5]


async def test_errors_raise_at_once_or_mid_stream() -> None:
    cut = ScriptStep(
        ModelResponse([Text("abcdef")]),
        text_chunk_chars=2,
        fail_after_chunks=2,
        error=ModelConnectionError("cut"),
    )
    model = ScriptedModel([RateLimitedError("429", retry_after=3), cut])
    with pytest.raises(RateLimitedError):
        await model.complete(HELLO)
    seen: list[StreamChunk] = []

    async def drain() -> None:
        async for chunk in model.stream(HELLO):
            seen.append(chunk)

    with pytest.raises(ModelConnectionError):
        await drain()
    assert seen == [TextChunk("ab", block=0), TextChunk("cd", block=0)]
    model.assert_complete()
