"""Helpers for the session tests: scripted turns and rendezvous tools."""

from __future__ import annotations

import socket
from collections import Counter
from typing import Any

import anyio

from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.sessions import AccessRecord
from toolweave.tools import Access, Concurrency, Interrupt, Tool, tool

DEAD_OWNER = (
    f"{socket.gethostname()}:{2**22 + 4321}"  # above Linux's pid_max: never alive
)


def say(text: str) -> ModelResponse:
    """A final answer."""
    return ModelResponse([Text(text)], StopReason.END_TURN, Usage(10, 5))


def use(*calls: ToolCall, text: str = "") -> ModelResponse:
    """A response calling tools."""
    blocks: list[Any] = [Text(text)] if text else []
    return ModelResponse([*blocks, *calls], StopReason.TOOL_USE, Usage(20, 8))


def call(call_id: str, name: str, **args: Any) -> ToolCall:
    """A tool call."""
    return ToolCall(call_id, name, args)


def describe(access: Access | None) -> AccessRecord | None:
    """An Access as the record the store keeps."""
    return None if access is None else AccessRecord(access.reads, access.writes)


class Bench:
    """Tools that count their invocations; `slow` blocks until released.

    `look` reads ``k:<key>``; `slow` and `touch` write ``k:<key>`` (so a `look`
    of the same key after them must wait).
    """

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.slow_started = anyio.Event()
        self.release = anyio.Event()

    def tools(self) -> list[Tool]:
        bench = self

        @tool(
            concurrency=Concurrency.SAFE,
            access=lambda a: Access(reads=[f"k:{a['key']}"]),
        )
        async def look(key: str) -> str:
            """Look at a key."""
            bench.calls[f"look {key}"] += 1
            return f"value of {key}"

        @tool(
            access=lambda a: Access(writes=[f"k:{a['key']}"]),
            interrupt=Interrupt.CANCEL,
        )
        async def slow(key: str) -> str:
            """Change a key, slowly."""
            bench.calls[f"slow {key}"] += 1
            bench.slow_started.set()
            await bench.release.wait()
            return f"changed {key}"

        @tool(access=lambda a: Access(writes=[f"k:{a['key']}"]))
        async def touch(key: str) -> str:
            """Change a key."""
            bench.calls[f"touch {key}"] += 1
            return f"touched {key}"

        return [look, slow, touch]
