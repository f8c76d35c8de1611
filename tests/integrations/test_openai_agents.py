"""scheduled_tools in a real Agents SDK run, driven by the SDK's own ScriptedModel."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from agents import (
    Agent,
    FunctionTool,
    Runner,
    ToolTimeoutError,
    function_tool,
    set_tracing_disabled,
)
from agents.testing.model import ScriptedModel, assistant_message, function_call
from framework_probe import DECLARATIONS, SCENARIO, Probe

from toolweave.integrations import READ_ONLY
from toolweave.integrations.openai_agents import scheduled_tools

set_tracing_disabled(True)  # no exporter: the tests never leave the machine


def _model(*specs: tuple[str, str]) -> ScriptedModel:
    calls = [
        function_call(tool, {"name": arg}, call_id=f"c{i}")
        for i, (tool, arg) in enumerate(specs)
    ]
    return ScriptedModel([calls, [assistant_message("done")]])


def _tools(probe: Probe) -> list[FunctionTool]:
    @function_tool
    async def read(name: str) -> str:
        """Read."""
        return await probe.read(name)

    @function_tool
    async def write(name: str) -> str:
        """Write."""
        return await probe.write(name)

    return [read, write]


def _answers(model: ScriptedModel) -> list[tuple[str, str]]:
    assert len(model.calls) == 2
    items = model.calls[1].input
    return [
        (item["call_id"], str(item["output"]))
        for item in items
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


async def _run(model: ScriptedModel, tools: list[Any]) -> Any:
    return await Runner.run(Agent(name="a", model=model, tools=tools), "go")


@function_tool(failure_error_function=None)
async def boom(name: str) -> str:
    """Fail."""
    raise ValueError(f"boom {name}")


@pytest.mark.anyio
async def test_default_leaves_the_error_to_the_sdk() -> None:
    model = _model(("boom", "x"))
    with pytest.raises(Exception, match="boom x"):
        await _run(model, scheduled_tools([boom], {"boom": READ_ONLY}))


def test_unknown_error_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="on_error"):
        scheduled_tools([], on_error="ignore")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_streamed_run_is_scheduled_the_same_way() -> None:
    probe = Probe()
    model = _model(*SCENARIO)
    agent = Agent(
        name="a", model=model, tools=scheduled_tools(_tools(probe), DECLARATIONS)
    )
    result = Runner.run_streamed(agent, "go")
    async for _ in result.stream_events():
        pass
    probe.check()
    assert [a[0] for a in _answers(model)] == ["c0", "c1", "c2", "c3", "c4"]
    assert result.final_output == "done"


# -- a tool's SDK timeout counts from the start of its body, not its wait ---------

HOLD = 0.9
TIMEOUT = 0.3  # the held call waits 3x its timeout for its turn


@function_tool
async def hold(name: str) -> str:
    """Undeclared (a barrier): the next call waits for it."""
    await anyio.sleep(HOLD)
    return f"held {name}"


def _quick(kind: str, **timeouts: Any) -> FunctionTool:
    if kind == "decorated":

        @function_tool(timeout=TIMEOUT, **timeouts)
        async def quick(name: str) -> str:
            """Quick unless told to hang (or to raise a TimeoutError of its own)."""
            if name == "hang":
                await anyio.sleep_forever()
            if name == "raise":
                raise TimeoutError("the tool's own")
            return f"quick {name}"

        return quick

    async def invoke(ctx: Any, input_json: str) -> str:
        name = json.loads(input_json)["name"]
        if name == "hang":
            await anyio.sleep_forever()
        if name == "raise":
            raise TimeoutError("the tool's own")
        return f"quick {name}"

    return FunctionTool(
        name="quick",
        description="Quick unless told to hang.",
        params_json_schema={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        on_invoke_tool=invoke,
        timeout_seconds=TIMEOUT,
        **{f"timeout_{k}" if k == "behavior" else k: v for k, v in timeouts.items()},
    )


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["decorated", "hand-built"])
async def test_a_call_waiting_for_its_turn_is_not_timed_out_by_the_sdk(
    kind: str,
) -> None:
    model = _model(("hold", "h"), ("quick", "q"))
    tools = scheduled_tools([hold, _quick(kind)], {"quick": DECLARATIONS["read"]})
    assert (await _run(model, tools)).final_output == "done"
    assert _answers(model) == [("c0", "held h"), ("c1", "quick q")]


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["decorated", "hand-built"])
async def test_a_body_past_its_timeout_is_answered_as_the_sdk_answers(
    kind: str,
) -> None:
    expected = f"Tool 'quick' timed out after {TIMEOUT:g} seconds."
    custom: dict[str, Any] = {
        "timeout_error_function": lambda ctx, err: f"custom {err.timeout_seconds:g}"
    }
    for extra, answer in (({}, expected), (custom, f"custom {TIMEOUT:g}")):
        bare = _model(("quick", "hang"))
        await _run(bare, [_quick(kind, **extra)])
        assert _answers(bare) == [("c0", answer)]  # the SDK's own answer
        model = _model(("hold", "h"), ("quick", "hang"))
        tools = scheduled_tools(
            [hold, _quick(kind, **extra)], {"quick": DECLARATIONS["read"]}
        )
        await _run(model, tools)
        assert _answers(model) == [("c0", "held h"), ("c1", answer)]


@pytest.mark.anyio
async def test_a_raising_timeout_keeps_the_sdk_clock() -> None:
    """``raise_exception``: the SDK's own timeout, waiting included (documented)."""
    model = _model(("hold", "h"), ("quick", "q"))
    quick = _quick("decorated", timeout_behavior="raise_exception")
    tools = scheduled_tools([hold, quick], {"quick": DECLARATIONS["read"]})
    with pytest.raises(ToolTimeoutError):
        await _run(model, tools)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["decorated", "hand-built"])
async def test_a_tools_own_timeout_error_is_its_error_not_the_sdk_timeout(
    kind: str,
) -> None:
    """A body that raises TimeoutError itself ends as it ends without toolweave."""

    async def outcome(scheduled: bool) -> str:
        model = _model(("quick", "raise"))
        tools = [_quick(kind)]
        if scheduled:
            tools = scheduled_tools(tools, {"quick": DECLARATIONS["read"]})
        try:
            await _run(model, tools)
        except Exception as exc:  # the SDK fails the run: compare how
            return f"raised {type(exc).__name__}: {exc}"
        return str(_answers(model))

    bare = await outcome(scheduled=False)
    assert "timed out" not in bare
    assert await outcome(scheduled=True) == bare
