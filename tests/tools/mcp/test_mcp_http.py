"""Streamable HTTP: a real SDK server on loopback, shared session, lost and regained."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_support import Recorder, free_port, http_test_server, lifecycle

import toolweave as tw
from toolweave.scheduling import Dispatcher
from toolweave.tools.mcp import MCPServerConfig, open_mcp_servers

# On trio, mcp 2.3's streamable-HTTP client iterates httpx2 SSE streams without
# aclosing them, so trio's async-generator finalizer warns when they are
# collected (on every POST response stream, and on the GET stream when a server
# dies). Harmless and not ours to fix; asyncio does not report it.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.mcp,
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
]


def _config(port: int) -> MCPServerConfig:
    return MCPServerConfig(
        name="web", transport="http", url=f"http://127.0.0.1:{port}/mcp"
    )


async def test_tools_over_streamable_http_share_one_session_at_once(
    tmp_path: Path,
) -> None:
    port = free_port()
    calls = [
        tw.ToolCall(f"c{i}", "mcp__web__rendezvous", {"key": "h", "party": 3})
        for i in range(3)
    ]
    async with http_test_server(port), open_mcp_servers([_config(port)]) as toolset:
        registry = tw.ToolRegistry(toolset.tools)
        assert {t.remote_name for t in toolset.tools} >= {"rendezvous", "clear_notes"}
        assert registry.get("mcp__web__clear_notes") is not None
        runner, _ = lifecycle(registry, tmp_path)
        recorder = Recorder(runner)
        # The server answers only when it holds all three requests at once.
        results = await Dispatcher().dispatch(calls, registry, recorder)
        assert [r.text for r in results] == ["met 3 at h"] * 3
        assert recorder.peak == 3
        assert toolset.server("web").statistics().starts == 1


async def test_a_lost_http_server_gives_an_error_result_then_reconnects(
    tmp_path: Path,
) -> None:
    port = free_port()
    note = tw.ToolCall("n", "mcp__web__add_note", {"text": "again"})
    async with (
        http_test_server(port) as first,
        open_mcp_servers([_config(port)]) as toolset,
    ):
        server = toolset.server("web")
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        [added] = await Dispatcher().dispatch([note], registry, runner)
        assert added.text == "1 notes"

        first.kill()
        await first.wait()
        [lost] = await Dispatcher().dispatch([note], registry, runner)
        assert lost.is_error
        assert "restarted on the next call" in lost.text
        assert not server.ready

        async with http_test_server(port):
            [again] = await Dispatcher().dispatch([note], registry, runner)
            assert not again.is_error, again
            assert again.text == "1 notes"  # a fresh server process
            assert server.statistics().starts == 2
