"""ChunkAggregator: block order, half-built reads, restarts."""

from __future__ import annotations

from toolweave.messages import StopReason, Text, Thinking, ToolCall, Usage
from toolweave.models import (
    ChunkAggregator,
    ReasoningChunk,
    StreamEnd,
    StreamRestart,
    TextChunk,
    ToolUseReady,
)


def test_blocks_come_out_in_index_order_whatever_the_arrival_order() -> None:
    aggregator = ChunkAggregator()
    aggregator.add(TextChunk("world", block=2))
    aggregator.add(ToolUseReady(ToolCall("c1", "read", {}), block=1))
    aggregator.add(ReasoningChunk("think", block=0))
    aggregator.add(ReasoningChunk("", block=0, signature="sig"))
    aggregator.add(TextChunk("!", block=2))
    response = aggregator.response()
    assert response.content == (
        Thinking("think", "sig"),
        ToolCall("c1", "read", {}),
        Text("world!"),
    )
    assert response.stop_reason is StopReason.UNKNOWN  # no StreamEnd yet: not final
    assert aggregator.tool_calls == [ToolCall("c1", "read", {})]


def test_a_half_built_response_never_raises() -> None:
    aggregator = ChunkAggregator()
    assert aggregator.response().content == ()
    aggregator.add(ReasoningChunk("", block=0, redacted_data="opaque"))
    aggregator.add(TextChunk("", block=1))
    response = aggregator.response()
    assert response.content == (Thinking("", redacted_data="opaque"),)
    assert aggregator.end is None


def test_stream_end_carries_stop_reason_usage_and_raw() -> None:
    aggregator = ChunkAggregator()
    aggregator.add(TextChunk("ok", block=0))
    aggregator.add(
        StreamEnd(
            StopReason.UNKNOWN, Usage(3, 4), raw_stop_reason="pause_turn", model="m"
        )
    )
    response = aggregator.response()
    assert (response.stop_reason, response.raw_stop_reason, response.model) == (
        StopReason.UNKNOWN,
        "pause_turn",
        "m",
    )
    assert response.usage == Usage(3, 4)


def test_a_restart_discards_everything_before_it() -> None:
    aggregator = ChunkAggregator()
    aggregator.add(TextChunk("dead", block=0))
    aggregator.add(ToolUseReady(ToolCall("c1", "write", {}), block=1))
    aggregator.add(StreamEnd(StopReason.TOOL_USE))
    aggregator.add(StreamRestart(1, model="m", error="cut"))
    assert aggregator.response().content == ()
    assert aggregator.end is None
    aggregator.add(TextChunk("alive", block=0))
    assert aggregator.response().text == "alive"
