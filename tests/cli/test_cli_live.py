"""The live view and the JSON output, driven by a real run (rendezvous, no sleeps)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from toolweave.cli._drive import drive_run, exit_code
from toolweave.cli._output import JsonOutput, LiveOutput
from toolweave.cli._settings import load_settings
from toolweave.cli._turns import TurnTracker
from toolweave.events import CompletionReason
from toolweave.loop import Agent
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.tools import Access, Concurrency, Interrupt, Tool, tool

pytestmark = pytest.mark.anyio


def _tools(started: anyio.Event, release: anyio.Event) -> list[Tool]:
    @tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(reads=[f"k:{a['key']}"])
    )
    async def look(key: str) -> str:
        """Look at a key."""
        return f"value of {key}"

    @tool(access=lambda a: Access(writes=[f"k:{a['key']}"]), interrupt=Interrupt.CANCEL)
    async def hold(key: str) -> str:
        """Change a key, when released."""
        started.set()
        await release.wait()
        return "changed"

    return [look, hold]


def _model() -> ScriptedModel:
    calls = [
        ToolCall("a", "look", {"key": "a"}),
        ToolCall("h", "hold", {"key": "b"}),
        ToolCall("b", "look", {"key": "b"}),  # reads what `hold` writes: waits for it
    ]
    return ScriptedModel(
        [
            ModelResponse(
                [Text("Looking around."), *calls], StopReason.TOOL_USE, Usage(5, 5)
            ),
            ModelResponse([Text("All done.")], StopReason.END_TURN, Usage(5, 5)),
        ]
    )


def _plain(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=120).print(renderable)
    return out.getvalue()


async def test_the_live_view_shows_each_call_state_while_the_batch_runs() -> None:
    started, release = anyio.Event(), anyio.Event()
    printed = io.StringIO()
    output = LiveOutput(Console(file=printed, width=120), TurnTracker())
    agent = Agent(_model(), _tools(started, release))
    async with anyio.create_task_group() as tg:

        async def drive() -> None:
            result = await drive_run(agent, "go", recorder=None, output=output)
            assert exit_code(result) == 0

        tg.start_soon(drive)
        await started.wait()
        await anyio.wait_all_tasks_blocked()
        live = _plain(output.renderable())
        rows = {}
        for line in live.splitlines():
            words = line.split()
            if words and words[0].isdigit():  # "#  call  state  time  when  overlaps"
                rows[f"{words[1]} {words[2]}"] = line
        assert "Looking around." in live
        assert "✓ done" in rows["look a"]
        assert "▶ running" in rows["hold b"]
        assert "· waiting" in rows["look b"]
        assert printed.getvalue() == ""  # the turn is still live, nothing printed yet
        release.set()
    final = printed.getvalue()
    assert "iteration 1" in final and "iteration 2" in final and "All done." in final
    assert final.count("✓ done") == 3 and "faster than serial" in final
    assert (
        output.finished is not None
        and output.finished.reason is CompletionReason.COMPLETED
    )


async def test_json_output_is_one_event_per_line() -> None:
    started, release = anyio.Event(), anyio.Event()
    release.set()
    stream = io.StringIO()
    agent = Agent(_model(), _tools(started, release))
    result = await drive_run(agent, "go", recorder=None, output=JsonOutput(stream))
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert result.finished is not None and lines[-1]["type"] == "RunFinished"
    assert [line["type"] for line in lines].count("ToolResultReady") == 3
    ready = [
        line["result"]["call_id"] for line in lines if line["type"] == "ToolResultReady"
    ]
    assert sorted(ready) == ["a", "b", "h"]


def test_the_documented_settings_example_is_valid(workspace: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    example = page.split("```toml\n", 1)[1].split("```", 1)[0]
    (workspace / "toolweave.toml").write_text(example)
    settings = load_settings(workspace, environ={}).settings
    assert settings.concurrency.max_concurrency == 8
    assert settings.hooks.PreToolUse[0].matcher == "bash"
    assert "git" in settings.mcp_servers
