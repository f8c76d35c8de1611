"""Static checks of the public API's types: type-checked in CI (mypy), never executed.

Each `assert_type` fails the mypy run if an overload or a return type regresses.
"""

from __future__ import annotations

from typing import assert_type

import toolweave as tw
from toolweave.tools import FunctionTool


@tw.tool
def bare(x: int) -> int:
    """A bare decorator."""
    return x


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access(reads=["k:"]))
async def configured(x: int) -> int:
    """A decorator with options."""
    return x


assert_type(bare, FunctionTool)
assert_type(configured, FunctionTool)
assert_type(tw.ToolRegistry([bare, configured]).get("bare"), tw.Tool | None)


async def dispatching(dispatcher: tw.Dispatcher, registry: tw.ToolRegistry) -> None:
    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return tw.ToolResult(call.id, "ok")

    results = await dispatcher.dispatch(
        [tw.ToolCall("1", "bare", {"x": 1})], registry, runner
    )
    assert_type(results, list[tw.ToolResult])


async def running(agent: tw.Agent) -> None:
    result = await agent.run("hi")
    assert_type(result, tw.RunResult)
    assert_type(result.completion_reason, tw.CompletionReason)
    assert_type(result.output, str)
    assert_type(agent.run_sync("hi"), tw.RunResult)
