"""ScheduledToolset in a real PydanticAI agent, driven by PydanticAI's FunctionModel."""

from __future__ import annotations

from typing import Any

import pytest
from framework_probe import DECLARATIONS, Probe
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset

from toolweave import Access, Concurrency
from toolweave.integrations import READ_ONLY, Declaration
from toolweave.integrations.pydantic_ai import ScheduledToolset, is_read_only


class Script:
    """A FunctionModel script: one response of tool calls, then text; records the answers."""

    def __init__(self, *specs: tuple[str, str]) -> None:
        self.specs = specs
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        if len(self.seen) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(tool, {"name": arg}, tool_call_id=f"c{i}")
                    for i, (tool, arg) in enumerate(self.specs)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    def answers(self) -> list[Any]:
        assert len(self.seen) == 2
        request = self.seen[1][-1]
        assert isinstance(request, ModelRequest)
        return [p for p in request.parts if isinstance(p, ToolReturnPart)]


def _toolset(probe: Probe, *extra: Any) -> FunctionToolset[Any]:
    async def read(name: str) -> str:
        """Read."""
        return await probe.read(name)

    async def write(name: str) -> str:
        """Write."""
        return await probe.write(name)

    return FunctionToolset([read, write, *extra])


async def _run(script: Script, toolset: Any) -> Any:
    agent = Agent(FunctionModel(script), toolsets=[toolset])
    return await agent.run("go")


@pytest.mark.anyio
async def test_pydantic_ais_sequential_flag_wins_over_a_read_only_declaration() -> None:
    """(An undeclared tool as a barrier: test_frameworks_shared.)"""
    probe = Probe()
    script = Script(("read", "a"), ("read", "b"), ("write", "W"))
    declarations = {"read": DECLARATIONS["read"], "write": READ_ONLY}
    inner = _toolset(probe)
    inner.tools["write"].sequential = True  # PydanticAI's own flag
    await _run(script, ScheduledToolset(inner, declarations=declarations))
    at = {e: i for i, e in enumerate(probe.log)}
    assert at["start", "W"] > max(at["end", "a"], at["end", "b"])
    assert probe.alone == [True]


@pytest.mark.parametrize(
    ("declaration", "read_only"),
    [
        (READ_ONLY, True),
        (
            Declaration(concurrency=Concurrency.SAFE),
            True,
        ),  # undeclared access: reads all
        (
            Declaration(concurrency=Concurrency.SAFE, access=Access(writes=("x",))),
            False,
        ),
        (Declaration(concurrency=Concurrency.SAFE, access=lambda a: Access()), False),
        (Declaration(concurrency=lambda a: True, access=Access()), False),
        (Declaration(access=Access()), False),
    ],
)
def test_only_provably_read_only_tools_overlap(
    declaration: Declaration, read_only: bool
) -> None:
    assert is_read_only(declaration) is read_only


async def boom(name: str) -> str:
    """Fail."""
    raise ValueError(f"boom {name}")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mode", "outcome"),
    [("retry", "retried")],  # "fail": test_frameworks_shared
)
async def test_opt_in_error_is_answered_and_siblings_finish(
    mode: Any, outcome: str
) -> None:
    probe = Probe()
    script = Script(("read", "a"), ("boom", "x"), ("read", "b"))
    toolset = ScheduledToolset(
        _toolset(probe, boom),
        declarations={**DECLARATIONS, "boom": READ_ONLY},
        on_error=mode,
    )
    assert (await _run(script, toolset)).output == "done"
    answers = script.answers()
    assert [p.tool_call_id for p in answers] == ["c0", "c1", "c2"]
    assert [p.outcome for p in answers] == ["success", outcome, "success"]
    assert "boom x" in str(answers[1].content)
    assert {("end", "a"), ("end", "b")} <= set(probe.log)


@pytest.mark.anyio
async def test_default_error_mode_raises_as_pydantic_ai_does() -> None:
    script = Script(("boom", "x"))
    toolset = ScheduledToolset(
        FunctionToolset([boom]), declarations={"boom": READ_ONLY}
    )
    with pytest.raises(ValueError, match="boom x"):
        await _run(script, toolset)


def test_unknown_error_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="on_error"):
        ScheduledToolset(FunctionToolset([]), on_error="ignore")  # type: ignore[arg-type]
