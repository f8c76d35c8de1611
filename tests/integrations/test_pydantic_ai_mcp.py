"""PydanticAI's `MCPToolset` inside `ScheduledToolset`, on the real mcp-server-time.

The MCP server runs over stdio as a real subprocess (PydanticAI's transport,
fastmcp's client: ``pydantic-ai-slim[mcp]``, in the pydantic-ai extra). What is
checked: the wrapped toolset answers as the bare one does, its declarations
decide which tools are barriers, a batch mixing MCP calls with function tools
keeps toolweave's schedule (a rendezvous of reads, the write alone), and an
MCP tool that needs approval resumes as without the wrapper. asyncio only, as
PydanticAI.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence
from typing import Any

import pytest

if importlib.util.find_spec("fastmcp") is None:
    _why = "PydanticAI's MCPToolset needs fastmcp: pip install -e '.[test,pydantic-ai]'"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run every test: {_why}", pytrace=False)
    pytest.skip(_why, allow_module_level=True)

from fastmcp.client.transports import StdioTransport
from framework_probe import DECLARATIONS, Probe
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset
from test_pydantic_ai_deferred import _probe_toolset

from toolweave.integrations import READ_ONLY
from toolweave.integrations.pydantic_ai import ScheduledToolset

pytestmark = pytest.mark.anyio

NOW = ("get_current_time", {"timezone": "UTC"})
CONVERT = (
    "convert_time",
    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Seoul"},
)


def _time_server() -> MCPToolset[Any]:
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
    )
    return MCPToolset(transport)


class Script:
    """Calls of one turn (ids c0, c1, ...), then "done"; records the tool definitions."""

    def __init__(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.sequential: dict[str, bool] = {}

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not any(isinstance(m, ModelResponse) for m in messages):
            self.sequential = {t.name: t.sequential for t in info.function_tools}
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"c{i}")
                    for i, (name, args) in enumerate(self.calls)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])


def _returns(result: Any) -> list[tuple[str, str, str]]:
    return [
        (p.tool_call_id, p.tool_name, p.outcome)
        for m in result.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


async def _run(toolset: AbstractToolset[Any], script: Script, **agent: Any) -> Any:
    built = Agent(FunctionModel(script), toolsets=[toolset], **agent)
    async with built:
        return await built.run("go")


async def test_a_wrapped_mcp_toolset_answers_as_the_bare_one() -> None:
    calls = [NOW, CONVERT, NOW]
    bare = await _run(_time_server(), Script(calls))
    script = Script(calls)
    wrapped = ScheduledToolset(
        _time_server(), declarations={"get_current_time": READ_ONLY}
    )
    got = await _run(wrapped, script)
    assert _returns(got) == _returns(bare)
    assert [outcome for *_, outcome in _returns(got)] == ["success"] * 3
    # declared read-only: runs beside its neighbours; undeclared: a barrier
    assert script.sequential == {"get_current_time": False, "convert_time": True}


async def test_mcp_calls_in_a_batch_keep_the_schedule() -> None:
    """read a, read b, MCP, W, read c, MCP, read d: the reads of a pair meet (a
    rendezvous), W runs alone; the MCP tool is declared read-only."""
    probe = Probe()
    combined = CombinedToolset([_time_server(), _probe_toolset(probe)])
    toolset = ScheduledToolset(
        combined, declarations={**DECLARATIONS, "get_current_time": READ_ONLY}
    )
    calls = [
        ("read", {"name": "a"}),
        ("read", {"name": "b"}),
        NOW,
        ("write", {"name": "W"}),
        ("read", {"name": "c"}),
        NOW,
        ("read", {"name": "d"}),
    ]
    result = await _run(toolset, Script(calls))
    assert result.output == "done"
    probe.check()
    assert [call_id for call_id, *_ in _returns(result)] == [f"c{i}" for i in range(7)]


async def test_an_mcp_tool_that_needs_approval_resumes_as_without_the_wrapper() -> None:
    async def resume(toolset: AbstractToolset[Any]) -> list[tuple[str, str, str]]:
        agent = Agent(
            FunctionModel(Script([NOW, CONVERT])),
            toolsets=[toolset],
            output_type=[str, DeferredToolRequests],
        )
        async with agent:
            first = await agent.run("go")
            assert isinstance(first.output, DeferredToolRequests)
            assert [c.tool_call_id for c in first.output.approvals] == ["c1"]
            second = await agent.run(
                message_history=first.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
            )
        assert second.output == "done"
        return _returns(second)

    def asks(ctx: Any, tool_def: Any, args: dict[str, Any]) -> bool:
        return tool_def.name == "convert_time"

    bare = await resume(_time_server().approval_required(asks))
    inside = await resume(ScheduledToolset(_time_server().approval_required(asks)))
    outside = await resume(ScheduledToolset(_time_server()).approval_required(asks))
    assert bare == inside == outside
    assert [(call_id, outcome) for call_id, _, outcome in bare] == [
        ("c0", "success"),
        ("c1", "success"),
    ]
