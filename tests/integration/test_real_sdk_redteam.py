"""Red team through the official SDKs: ids spelled for another provider, output
that is not valid UTF-8 text.

The model (a real recorded stream, ids rewritten) names every call
``functions.read:0`` — the Kimi style some local servers use, illegal for
Anthropic — and a tool returns text with a lone surrogate (a file name decoded
with ``surrogateescape``). What each SDK puts on the wire must be accepted:
ids spelled as that provider allows, unique and paired, and the request body
valid UTF-8 (an SDK cannot even encode a lone surrogate).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

import toolweave as tw
from toolweave.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from toolweave.tools import Access, Concurrency, SessionState

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import LoopbackServer, SseReply, fixture

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

ORIGINAL_IDS = {
    "anthropic": ("toolu_01A", "toolu_01B", "toolu_01C"),
    "openai_chat": ("call_01A", "call_01B", "call_01C"),
    "openai_responses": ("call_01A", "call_01B", "call_01C"),
}
FOREIGN = "functions.read:0" + "x" * 30  # illegal for Anthropic, too long for Chat
LONE = b"name\xff.txt".decode("utf-8", "surrogateescape")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the SDKs wait on real sockets."""
    return str(request.param)


def _foreign_ids(provider: str) -> SseReply:
    raw = fixture(provider, "tools").raw
    for original in ORIGINAL_IDS[provider]:
        raw = raw.replace(f'"{original}"', f'"{FOREIGN}"')
    return SseReply(raw)


def _model(provider: str, url: str) -> tw.models.Model:
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-6", api_key="test-key", base_url=url)
    if provider == "openai_chat":
        return OpenAIChatModel("gpt-4.1", api_key="test-key", base_url=url + "/v1")
    return OpenAIResponsesModel("gpt-5", api_key="test-key", base_url=url + "/v1")


def _wire(provider: str, body: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """(tool-call ids, (result id, result text) pairs) of one request body."""
    if provider == "anthropic":
        blocks = [
            b
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
        ]
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [
            (b["tool_use_id"], str(b["content"]))
            for b in blocks
            if b["type"] == "tool_result"
        ]
        return calls, results
    if provider == "openai_chat":
        calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
        results = [
            (m["tool_call_id"], str(m["content"]))
            for m in body["messages"]
            if m["role"] == "tool"
        ]
        return calls, results
    items = body["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    results = [
        (i["call_id"], str(i["output"]))
        for i in items
        if i.get("type") == "function_call_output"
    ]
    return calls, results


def _tools() -> list[tw.tools.Tool]:
    @tw.tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    def read(path: str) -> str:
        """Read (returns a surrogateescape'd file name)."""
        return f"listing: {LONE}"

    @tw.tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    def grep(pattern: str, path: str = ".") -> str:
        """Search."""
        return "grep ok"

    @tw.tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    def glob(pattern: str) -> str:
        """Find files."""
        return "glob ok"

    return [read, grep, glob]


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "openai_responses"])
async def test_foreign_ids_and_surrogate_output_reach_every_sdk_valid(
    provider: str, tmp_path: Path
) -> None:
    with LoopbackServer() as server:
        server.script(
            _foreign_ids(provider), _foreign_ids(provider), fixture(provider, "text")
        )
        model = _model(provider, server.url)
        state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
        agent = tw.Agent(model, _tools(), state=state)
        try:
            result = await agent.run("Look around, twice.")
        finally:
            await agent.aclose()
            await model.aclose()
        assert server.pending == 0 and server.errors == [] and server.unexpected == []
        bodies = [r.body for r in server.requests]
    assert result.completion_reason is tw.CompletionReason.COMPLETED, result.detail
    assert len(bodies) == 3
    for body, answered in ((bodies[1], 3), (bodies[2], 6)):
        calls, results = _wire(provider, body)
        assert len(calls) == answered and len(set(calls)) == answered
        assert [call_id for call_id, _ in results] == calls
        if provider == "anthropic":
            assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", c) for c in calls), calls
        if provider == "openai_chat":
            assert all(len(c) <= 40 for c in calls), calls
        texts = [text for _, text in results]
        assert texts[0] == "listing: name\ufffd.txt"
    # the transcript keeps the model's ids
    assert {c.id for m in result.messages for c in m.tool_calls} == {FOREIGN}
