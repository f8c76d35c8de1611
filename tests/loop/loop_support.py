"""Helpers for the agent-loop tests: scripted responses, rendezvous tools, checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio

from toolweave.events import Event, RunFinished
from toolweave.loop import Agent, AgentConfig, RunResult
from toolweave.messages import Message, ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.models._anthropic_convert import anthropic_messages
from toolweave.scheduling import ConcurrencyConfig
from toolweave.tools import Access, Concurrency, Interrupt, Tool, tool


def say(
    text: str, *, usage: Usage | None = None, stop: StopReason = StopReason.END_TURN
) -> ModelResponse:
    """A final text answer."""
    return ModelResponse([Text(text)], stop, usage or Usage(10, 5))


def use(
    *calls: ToolCall,
    text: str = "",
    usage: Usage | None = None,
    stop: StopReason = StopReason.TOOL_USE,
) -> ModelResponse:
    """A response that calls tools (optionally after some text)."""
    blocks: list[Any] = [Text(text)] if text else []
    return ModelResponse([*blocks, *calls], stop, usage or Usage(10, 5))


def call(call_id: str, name: str, **args: Any) -> ToolCall:
    """A tool call."""
    return ToolCall(call_id, name, args)


def assert_provider_valid(messages: Sequence[Message]) -> None:
    """Check the transcript the way Anthropic's Messages API does, on its wire format.

    Independent of `toolweave.loop.transcript_problems`: starts with a user turn,
    no empty content, and every tool_use answered by tool_result blocks at the
    start of the very next (user) message, one for one, in order.
    """
    wire = anthropic_messages(messages)
    assert wire, "empty transcript"
    assert wire[0]["role"] == "user", wire[0]
    for index, message in enumerate(wire):
        content = message["content"]
        assert content, f"message {index} is empty"
        if message["role"] != "assistant" or isinstance(content, str):
            continue
        uses = [b["id"] for b in content if b["type"] == "tool_use"]
        if not uses:
            continue
        assert index + 1 < len(wire), (
            f"tool_use {uses} of message {index} never answered"
        )
        reply = wire[index + 1]
        assert reply["role"] == "user"
        leading = []
        for block in reply["content"]:
            if block["type"] != "tool_result":
                break
            leading.append(block["tool_use_id"])
        assert leading == uses, (
            f"message {index + 1}: results {leading} for calls {uses}"
        )


def finished(events: Sequence[Event]) -> RunFinished:
    """The RunFinished event, checking it is last and unique."""
    assert isinstance(events[-1], RunFinished), type(events[-1]).__name__
    assert sum(isinstance(e, RunFinished) for e in events) == 1
    return events[-1]


def kinds(events: Sequence[Event]) -> list[str]:
    """Event class names, in order."""
    return [type(e).__name__ for e in events]


async def run_collect(
    agent: Agent, prompt: str = "go"
) -> tuple[RunResult, list[Event]]:
    """Run `agent` through `run_stream`, returning the result and every event."""
    events: list[Event] = []
    async for event in agent.run_stream(prompt):
        events.append(event)
    done = finished(events)
    result = RunResult(
        done.output,
        done.reason,
        messages=done.messages,
        usage=done.usage,
        cost=done.cost,
        detail=done.detail,
    )
    return result, events


def config(**overrides: Any) -> AgentConfig:
    """An AgentConfig with test-friendly defaults."""
    return AgentConfig(**overrides)


def sequential() -> ConcurrencyConfig:
    """Concurrency off: the plain loop."""
    return ConcurrencyConfig(enabled=False)


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def fail(why: str) -> str:
    """Always fails."""
    raise RuntimeError(why)


class Gate:
    """Rendezvous: tools announce they started, then wait until released."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.finished: list[str] = []
        self.release = anyio.Event()
        self.all_started = anyio.Event()
        self.expected = 0

    def tool(
        self,
        name: str,
        *,
        interrupt: Interrupt,
        concurrency: Concurrency = Concurrency.SAFE,
    ) -> Tool:
        gate = self

        async def wait(tag: str) -> str:
            """The wait test tool."""
            gate.started.append(tag)
            if len(gate.started) >= gate.expected:
                gate.all_started.set()
            await gate.release.wait()
            gate.finished.append(tag)
            return f"{tag} done"

        # no declared access: SAFE reads everything, SEQUENTIAL is a barrier behind them
        return tool(name=name, concurrency=concurrency, interrupt=interrupt)(wait)


def scripted(*responses: Any, name: str = "scripted", **kwargs: Any) -> ScriptedModel:
    """A ScriptedModel over `responses`."""
    return ScriptedModel(list(responses), name=name, **kwargs)
