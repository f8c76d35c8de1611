"""What OpenAI-compatible servers send that they shouldn't, repaired at the stream."""

from __future__ import annotations

import pytest
from models_loopback import LoopbackServer, fixture
from models_sdk_cases import OPENAI_CHAT

from toolweave.messages import Message, StopReason, ToolCall
from toolweave.models import ModelRequest, StreamChunk, ToolUseReady

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]


async def test_ids_wrappers_and_bad_json_are_repaired_without_crashing(
    server: LoopbackServer,
) -> None:
    server.script(fixture("openai_chat", "quirks"))
    chunks: list[StreamChunk] = []
    async with OPENAI_CHAT.open(
        server, "qwen2.5-coder-7b-instruct", compatible=True
    ) as model:
        async for chunk in model.stream(ModelRequest([Message("user", "go")])):
            chunks.append(chunk)
    calls = [c.call for c in chunks if isinstance(c, ToolUseReady)]
    assert calls == [
        ToolCall(
            "call_chatcmpl-q1_0", "read", {"path": "a.py"}
        ),  # empty id: made up, stable
        ToolCall("call_0", "read", {"path": "b.py"}),
        ToolCall("call_0", "grep", {"pattern": "x"}),  # a repeated id is kept as sent
        ToolCall(
            "call_9_0", "glob", {"pattern": "*.py"}
        ),  # multi_tool_use.parallel unpacked
        ToolCall("call_9_1", "read", {"path": "c.py"}),
        ToolCall("call_bad", "write", {}, raw_arguments="{path: 'x.py', content: }"),
        ToolCall(
            "call_x1", "bash", {"command": "ls"}
        ),  # every call at index 0, own ids
        ToolCall("call_x2", "bash", {"command": "pwd"}),
    ]
    blocks = [c.block for c in chunks if isinstance(c, ToolUseReady)]
    assert blocks == sorted(blocks)
    assert len(set(blocks)) == len(blocks)
    end = chunks[-1]
    assert not isinstance(end, ToolUseReady)
    assert getattr(end, "stop_reason", None) is StopReason.TOOL_USE


async def test_the_same_stream_gives_the_same_ids(server: LoopbackServer) -> None:
    server.script(fixture("openai_chat", "quirks"), fixture("openai_chat", "quirks"))
    async with OPENAI_CHAT.open(
        server, "qwen2.5-coder-7b-instruct", compatible=True
    ) as model:
        first = await model.complete(ModelRequest([Message("user", "go")]))
        second = await model.complete(ModelRequest([Message("user", "go")]))
    assert [c.id for c in first.tool_calls] == [c.id for c in second.tool_calls]
    assert [c.id for c in first.tool_calls].count("call_0") == 2  # kept as sent
