"""Repeated call ids through the official SDKs: what each provider is sent is valid.

The model answers twice with the same three calls, every one of them named
``call_0`` (duplicates within a response, and the same id in every turn — what
local OpenAI-compatible servers send), and one tool's output is large enough to
be replaced by a preview. The requests the SDKs put on the wire must carry
unique tool-call ids, every result paired with its call, each result its own
(never an earlier call's preview); the run's transcript keeps the model's ids.
"""

from __future__ import annotations

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
REPEATED = "call_0"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the SDKs wait on real sockets."""
    return str(request.param)


def _same_id_everywhere(provider: str) -> SseReply:
    raw = fixture(provider, "tools").raw
    for original in ORIGINAL_IDS[provider]:
        raw = raw.replace(f'"{original}"', f'"{REPEATED}"')
    return SseReply(raw)


def _model(provider: str, url: str) -> tw.models.Model:
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-6", api_key="test-key", base_url=url)
    if provider == "openai_chat":
        return OpenAIChatModel("gpt-4.1", api_key="test-key", base_url=url + "/v1")
    return OpenAIResponsesModel("gpt-5", api_key="test-key", base_url=url + "/v1")


def _wire(provider: str, body: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """(tool-call ids, (result id, result text) pairs) of one request body, in order."""
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


def _tools(counter: list[int]) -> list[tw.tools.Tool]:
    def tag(name: str) -> str:
        counter[0] += 1
        return f"[{name} #{counter[0]}]"

    @tw.tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(), max_result_chars=500
    )
    def read(path: str) -> str:
        """Read a file (large: persisted with a preview)."""
        return tag("read") + " " + "r" * 2_000

    @tw.tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    def grep(pattern: str, path: str = ".") -> str:
        """Search."""
        return tag("grep")

    @tw.tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    def glob(pattern: str) -> str:
        """Find files."""
        return tag("glob")

    return [read, grep, glob]


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "openai_responses"])
async def test_repeated_ids_reach_the_provider_unique_and_paired(
    provider: str, tmp_path: Path
) -> None:
    counter = [0]
    with LoopbackServer() as server:
        server.script(
            _same_id_everywhere(provider),
            _same_id_everywhere(provider),
            fixture(provider, "text"),
        )
        model = _model(provider, server.url)
        state = SessionState(workspace=tmp_path, results_dir=tmp_path / "results")
        # Sequential calls: the counter then numbers them in call order.
        config = tw.AgentConfig(concurrency=tw.ConcurrencyConfig(enabled=False))
        agent = tw.Agent(model, _tools(counter), config=config, state=state)
        try:
            result = await agent.run("Look around, twice.")
        finally:
            await agent.aclose()
            await model.aclose()
        assert server.pending == 0 and server.errors == [] and server.unexpected == []
        bodies = [r.body for r in server.requests]
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert len(bodies) == 3

    for body, answered in ((bodies[1], 3), (bodies[2], 6)):
        calls, results = _wire(provider, body)
        assert len(calls) == answered and len(set(calls)) == answered  # unique ids
        assert [call_id for call_id, _ in results] == calls  # each result, its call
        assert calls[0] == REPEATED  # the first keeps the model's id

    _, results = _wire(provider, bodies[2])
    texts = [text for _, text in results]
    for number, (text, name) in enumerate(
        zip(texts, ["read", "grep", "glob"] * 2, strict=True), start=1
    ):
        assert f"[{name} #{number}]" in text  # its own output or its own preview
    assert texts[0].startswith("<persisted-output>")
    assert texts[3].startswith("<persisted-output>") and texts[3] != texts[0]

    # The transcript (and so the store) keeps the ids the model sent.
    ids = [c.id for m in result.messages for c in m.tool_calls]
    assert ids == [REPEATED] * 6
    answered_ids = [r.call_id for m in result.messages for r in m.tool_results]
    assert answered_ids == [REPEATED] * 6
