"""One shared session per server, and what a call's result becomes (own SDK server)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp_support import Recorder, lifecycle, own_server_config

import toolweave as tw
from toolweave.events import ToolProgress
from toolweave.scheduling import Dispatcher
from toolweave.tools.mcp import open_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]


async def test_one_session_carries_concurrent_calls_of_one_server(
    tmp_path: Path,
) -> None:
    async with open_mcp_servers([own_server_config()]) as toolset:
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        recorder = Recorder(runner)
        # The server answers only when it holds all three requests at once.
        calls = [
            tw.ToolCall(f"c{i}", "mcp__t__rendezvous", {"key": "k", "party": 3})
            for i in range(3)
        ]
        results = await Dispatcher().dispatch(calls, registry, recorder)
        server = toolset.server("t")
        assert [r.text for r in results] == ["met 3 at k"] * 3
        assert recorder.peak == 3
        assert server.statistics().starts == 1
        assert server.statistics().calls_in_flight == 0


async def test_results_errors_and_empty_output_through_the_lifecycle(
    tmp_path: Path,
) -> None:
    async with open_mcp_servers([own_server_config()]) as toolset:
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        calls = [
            tw.ToolCall("c0", "mcp__t__picture", {}),
            tw.ToolCall("c1", "mcp__t__structured_only", {}),
            tw.ToolCall("c2", "mcp__t__fails", {"reason": "disk on fire"}),
            tw.ToolCall("c3", "mcp__t__list_notes", {}),
            tw.ToolCall("c4", "mcp__t__fails", {"reason": 7}),
            tw.ToolCall("c5", "mcp__t__add_note", {"text": "one"}),
            tw.ToolCall("c6", "mcp__t__list_notes", {}),
        ]
        results = await Dispatcher().dispatch(calls, registry, runner)
        unknown = await toolset.server("t").call_tool("no_such_tool", {})

    picture, structured, failed, empty, invalid, added, listed = results
    assert isinstance(picture.content, tuple)
    assert picture.content[0] == tw.Text("a pixel")
    assert isinstance(picture.content[1], tw.Image)
    assert picture.content[1].media_type == "image/png"
    assert structured.text == '{"answer": 42}'
    assert failed.is_error
    assert "disk on fire" in failed.text
    assert not empty.is_error
    assert "completed with no output" in empty.text
    assert invalid.is_error
    assert "reason: 7 is not of type 'string'" in invalid.text
    assert added.text == "1 notes"
    assert listed.text == "one"
    assert unknown.is_error  # this SDK server reports unknown tools as results


async def test_server_progress_reaches_the_lifecycle_as_progress_events(
    tmp_path: Path,
) -> None:
    async with open_mcp_servers([own_server_config()]) as toolset:
        registry = tw.ToolRegistry(toolset.tools)
        runner, events = lifecycle(registry, tmp_path)
        call = tw.ToolCall("c0", "mcp__t__count_to", {"n": 2})
        [result] = await Dispatcher().dispatch([call], registry, runner)
        # The SDK delivers progress from tasks of its own; let them run.
        await anyio.wait_all_tasks_blocked()
    assert result.text == "counted to 2"
    progress = [(e.message, e.fraction) for e in events if isinstance(e, ToolProgress)]
    assert sorted(progress) == [("step 1", 0.5), ("step 2", 1.0)]


async def test_tools_without_a_read_only_annotation_are_sequential_barriers() -> None:
    async with open_mcp_servers([own_server_config()]) as toolset:
        tools = {t.remote_name: t for t in toolset.tools}
    for name in ("unannotated", "add_note", "clear_notes"):
        assert tools[name].concurrency is tw.Concurrency.SEQUENTIAL
        assert tools[name].access_for({}) == tw.Access.barrier()
    for name in ("rendezvous", "list_notes", "picture", "fails"):
        assert tools[name].concurrency is tw.Concurrency.SAFE
        assert tools[name].access_for({}) == tw.Access.read_all()
