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

import pytest

import toolweave as tw
from toolweave.tools import Access, Concurrency, SessionState

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import LoopbackServer, fixture
from real_sdk_support import (
    sdk_model,
    tools_reply_with_ids,
    wire_calls_and_results,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

REPEATED = "call_0"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the SDKs wait on real sockets."""
    return str(request.param)


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
            tools_reply_with_ids(provider, REPEATED),
            tools_reply_with_ids(provider, REPEATED),
            fixture(provider, "text"),
        )
        model = sdk_model(provider, server.url)
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
        calls, results = wire_calls_and_results(provider, body)
        assert len(calls) == answered and len(set(calls)) == answered  # unique ids
        assert [call_id for call_id, _ in results] == calls  # each result, its call
        assert calls[0] == REPEATED  # the first keeps the model's id

    _, results = wire_calls_and_results(provider, bodies[2])
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
