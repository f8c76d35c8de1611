"""The gate never parses a shell command on the event loop.

The gate's `concurrency_for` is synchronous; the bash tool's
`warm_declarations` parses the command on a worker thread first (awaited by
`Dispatcher.dispatch` and by the loop before a streamed call is offered), so
the gate and the permission rules only find cached parses. Each test records
the thread of every real parse and asserts none ran on the loop's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import toolweave as tw
from toolweave.models import ScriptedModel
from toolweave.tools.builtin import coding_tools
from toolweave.tools.builtin.bash import _parse as _bash_parse
from toolweave.tools.builtin.bash._tool import BashTool

COMMANDS = ["ls -la", "grep -rn a .", "wc -l a.txt", "touch b.txt"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the bash tool waits on real processes."""
    return str(request.param)


@pytest.fixture
def parse_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The thread ids on which a command was really parsed (not a cache hit)."""
    threads: list[int] = []
    real = _bash_parse._parse

    def recording(command: str) -> object:
        threads.append(threading.get_ident())
        return real(command)

    monkeypatch.setattr(_bash_parse, "_parse", recording)
    _bash_parse.parse_script.cache_clear()
    yield threads
    _bash_parse.parse_script.cache_clear()


@pytest.mark.anyio
async def test_dispatch_parses_off_the_loop(
    tmp_path: Path, parse_threads: list[int]
) -> None:
    loop_thread = threading.get_ident()
    registry = tw.ToolRegistry([BashTool(tmp_path)])
    calls = [
        tw.ToolCall(f"c{i}", "bash", {"command": c}) for i, c in enumerate(COMMANDS)
    ]

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return tw.ToolResult(call.id, "ran")

    async with tw.Dispatcher(tw.ConcurrencyConfig()) as dispatcher:
        results = await dispatcher.dispatch(calls, registry, runner)
    assert [r.text for r in results] == ["ran"] * len(COMMANDS)
    assert len(parse_threads) == len(COMMANDS)  # each parsed once, then cached
    assert loop_thread not in parse_threads


@pytest.mark.parametrize("overlap", [True, False], ids=["streamed", "after-response"])
@pytest.mark.anyio
async def test_the_agent_parses_off_the_loop(
    tmp_path: Path, parse_threads: list[int], overlap: bool
) -> None:
    loop_thread = threading.get_ident()
    (tmp_path / "a.txt").write_text("a\n")
    calls = [
        tw.ToolCall(f"c{i}", "bash", {"command": c}) for i, c in enumerate(COMMANDS)
    ]
    model = ScriptedModel(
        [
            tw.ModelResponse(calls, stop_reason=tw.StopReason.TOOL_USE),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )
    config = tw.AgentConfig(
        permission_mode="bypass",
        workspace=tmp_path,
        concurrency=tw.ConcurrencyConfig(streaming_overlap=overlap),
    )
    agent = tw.Agent(model, coding_tools(tmp_path), config=config)
    with anyio.fail_after(60):
        result = await agent.run("go")
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    results = [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert "a.txt" in results[0].text  # the commands really ran
    assert parse_threads, "the commands were parsed somewhere"
    assert loop_thread not in parse_threads


@pytest.mark.anyio
async def test_a_failing_warm_up_leaves_the_gate_to_do_the_work(
    tmp_path: Path, parse_threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: BashTool, raw_input: object) -> None:
        raise RuntimeError("warm-up broke")

    monkeypatch.setattr(BashTool, "warm_declarations", broken)
    registry = tw.ToolRegistry([BashTool(tmp_path)])
    plans: list[bool] = []

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return tw.ToolResult(call.id, "ran")

    calls = [tw.ToolCall("r", "bash", {"command": "ls"})]
    async with tw.Dispatcher(tw.ConcurrencyConfig()) as dispatcher:
        results = await dispatcher.dispatch(calls, registry, runner)
    plans.append(tw.scheduling.classify(calls[0], registry).parallel_ok)
    assert [r.text for r in results] == ["ran"]
    assert plans == [True]  # the gate parsed it itself (bounded), same verdict
    assert parse_threads == [threading.get_ident()]
