"""The whole stack with a real provider SDK: Agent + coding tools + the official
`anthropic`/`openai` clients against a loopback server speaking their wire format.

The model's first reply asks for read, grep and glob at once (a recorded-shape
stream); the second is plain text. The test checks the run ends COMPLETED, and that
the follow-up request carried every tool result back in the provider's own shape,
keyed by the model's ids, in call order.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import toolweave as tw

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import LoopbackServer, fixture
from real_sdk_support import sdk_model

pytestmark = [
    pytest.mark.anyio,
    # Under trio the SDKs drop their own internal async generators unfinished (their
    # bug, not ours: our generators are closed); trio reports them when collected.
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

IDS = {
    "anthropic": ["toolu_01A", "toolu_01B", "toolu_01C"],
    "openai_chat": ["call_01A", "call_01B", "call_01C"],
}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the SDKs wait on real sockets."""
    return str(request.param)


def _workspace(root: Path) -> None:
    (root / "a.py").write_text("print('a')  # TODO: more\n")
    (root / "src").mkdir()
    (root / "src" / "m.py").write_text("# TODO: everything\n")
    (root / "README.md").write_text("# demo\n")


def _tool_results(provider: str, body: Any) -> list[tuple[str, str]]:
    """(call id, result text) pairs of the follow-up request, in order."""
    if provider == "anthropic":
        return [
            (block["tool_use_id"], str(block["content"]))
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
    if provider == "openai_chat":
        return [
            (m["tool_call_id"], str(m["content"]))
            for m in body["messages"]
            if m["role"] == "tool"
        ]
    return [
        (item["call_id"], str(item["output"]))
        for item in body["input"]
        if item.get("type") == "function_call_output"
    ]


@pytest.mark.parametrize("provider", ["anthropic", "openai_chat", "openai_responses"])
async def test_an_agent_runs_parallel_tool_calls_through_a_real_sdk(
    provider: str, tmp_path: Path
) -> None:
    _workspace(tmp_path)
    with LoopbackServer() as server:
        server.script(fixture(provider, "tools"), fixture(provider, "text"))
        model = sdk_model(provider, server.url)
        agent = tw.Agent(
            model,
            tw.tools.coding_tools(tmp_path),
            config=tw.AgentConfig(workspace=tmp_path),
        )
        try:
            result = await agent.run("Look around.")
        finally:
            await agent.aclose()
            await model.aclose()
        assert server.pending == 0 and server.errors == [] and server.unexpected == []
        requests = [r.body for r in server.requests]
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert len(requests) == 2
    results = _tool_results(provider, requests[1])
    assert len(results) == 3
    if provider in IDS:
        assert [call_id for call_id, _ in results] == IDS[provider]
    read_a, grep_todo, glob_md = (text for _, text in results)
    assert "print('a')" in read_a
    assert "src/m.py" in grep_todo or "m.py" in grep_todo
    assert "README.md" in glob_md
    # the transcript answers every call, in the model's order
    calls = [c.id for m in result.messages for c in m.tool_calls]
    answered = [r.call_id for m in result.messages for r in m.tool_results]
    assert calls == answered and len(calls) == 3


def test_run_sync_twice_with_a_model_named_by_a_string(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _workspace(tmp_path)
    with LoopbackServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        server.script(
            fixture("anthropic", "tools"),
            fixture("anthropic", "text"),
            fixture("anthropic", "text"),
        )
        agent = tw.Agent(
            "anthropic:claude-sonnet-4-6",
            tw.tools.coding_tools(tmp_path),
            config=tw.AgentConfig(workspace=tmp_path),
        )
        first = agent.run_sync("Look around.")
        second = agent.run_sync("Say hello.")  # a new event loop, a fresh client
        assert server.pending == 0 and server.errors == []
    assert first.completion_reason is tw.CompletionReason.COMPLETED
    assert second.completion_reason is tw.CompletionReason.COMPLETED
    assert second.output == "Hello, world!"
