"""What Ctrl-C will do (issue 29, item 5): events carry each running call's interrupt
behaviour, the live view says it, and an interrupt then does what the view said.

Rendezvous only: the tools signal that they run and wait to be released.
"""

from __future__ import annotations

import io

import anyio
import pytest
from rich.console import Console

from toolweave.cli._output import LiveOutput
from toolweave.cli._turns import CallRow, Turn, TurnTracker
from toolweave.events import CompletionReason, Event, RunFinished, ToolRunning
from toolweave.loop import Agent
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.tools import Access, Concurrency, Interrupt, Tool, tool

pytestmark = pytest.mark.anyio


def _tools(running: list[str], release: anyio.Event) -> list[Tool]:
    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(),
        interrupt=Interrupt.CANCEL,
    )
    async def watch(name: str) -> str:
        """Watch something until released."""
        running.append(f"watch {name}")
        await release.wait()
        return "watched"

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(),
        interrupt=Interrupt.BLOCK,
    )
    async def deploy(name: str) -> str:
        """Deploy: must not be cut half-way."""
        running.append(f"deploy {name}")
        await release.wait()
        return f"deployed {name}"

    return [watch, deploy]


def _model(*calls: ToolCall) -> ScriptedModel:
    return ScriptedModel(
        [
            ModelResponse([Text("Working."), *calls], StopReason.TOOL_USE, Usage(5, 5)),
            ModelResponse([Text("Done.")], StopReason.END_TURN, Usage(5, 5)),
        ]
    )


def _plain(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(renderable)
    return out.getvalue()


async def _live_while_running(
    calls: list[ToolCall], *, interrupt: bool
) -> tuple[str, list[Event], list[str]]:
    running: list[str] = []
    release = anyio.Event()
    output = LiveOutput(Console(file=io.StringIO(), width=200), TurnTracker())
    agent = Agent(_model(*calls), _tools(running, release))
    events: list[Event] = []
    async with agent.open_run("go") as run, anyio.create_task_group() as tg:

        async def consume() -> None:
            async for event in run.events():
                events.append(event)
                output.handle(event)

        tg.start_soon(consume)
        with anyio.fail_after(10):  # bounded: a call that never starts fails the test
            while len(running) < len(calls):
                await anyio.wait_all_tasks_blocked()
        await anyio.wait_all_tasks_blocked()
        live = _plain(output.renderable())
        if interrupt:
            run.interrupt()
            await anyio.wait_all_tasks_blocked()
        release.set()
    await agent.aclose()
    return live, events, running


async def test_running_events_carry_the_interrupt_behaviour() -> None:
    calls = [
        ToolCall("w", "watch", {"name": "logs"}),
        ToolCall("d", "deploy", {"name": "api"}),
    ]
    _, events, _ = await _live_while_running(calls, interrupt=False)
    running = {e.key: e.interrupt for e in events if isinstance(e, ToolRunning)}
    assert running == {"1.0": "cancel", "1.1": "block"}


async def test_the_live_view_says_which_calls_run_to_their_end() -> None:
    calls = [
        ToolCall("w", "watch", {"name": "logs"}),
        ToolCall("d", "deploy", {"name": "api"}),
    ]
    live, events, _ = await _live_while_running(calls, interrupt=True)
    assert (
        "Ctrl-C: 1 call cancelled now, 1 call run to their end first (deploy api)"
        in live
    )
    assert "press it twice to quit at once" in live
    # and the interrupt did what the view said
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.reason is CompletionReason.INTERRUPTED
    results = {r.call_id: r for m in finished.messages for r in m.tool_results}
    assert results["d"].content == "deployed api" and not results["d"].is_error
    assert results["w"].is_error and results["w"].synthetic


async def test_the_live_view_says_everything_stops_when_all_can_be_cancelled() -> None:
    calls = [
        ToolCall("a", "watch", {"name": "a"}),
        ToolCall("b", "watch", {"name": "b"}),
    ]
    live, _, _ = await _live_while_running(calls, interrupt=False)
    assert "Ctrl-C stops now: 2 calls running cancelled" in live
    assert "run to their end" not in live


def test_no_hint_once_nothing_runs() -> None:
    turn = Turn(1)
    turn.rows["1.0"] = CallRow(ToolCall("x", "watch", {"name": "x"}))
    assert turn.interrupt_hint() is None  # waiting only: nothing runs yet
