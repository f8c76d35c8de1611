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

FOREIGN = "functions.read:0" + "x" * 30  # illegal for Anthropic, too long for Chat
LONE = b"name\xff.txt".decode("utf-8", "surrogateescape")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the SDKs wait on real sockets."""
    return str(request.param)


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
            tools_reply_with_ids(provider, FOREIGN),
            tools_reply_with_ids(provider, FOREIGN),
            fixture(provider, "text"),
        )
        model = sdk_model(provider, server.url)
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
        calls, results = wire_calls_and_results(provider, body)
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
