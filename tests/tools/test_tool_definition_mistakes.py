"""Honest mistakes in a tool's definition are named where they are made (issue 27, item 7).

A tool with no description, a parameter with no annotation: refused when the
decorator runs (`ToolDefinitionError`), as the README says. A tool that returns a
coroutine instead of awaiting it: an error result naming the mistake, the
coroutine closed (no "never awaited" warning; `filterwarnings = error` would turn
one into a failure). `run_sync` inside a running loop: a `UsageError` that says to
await `run`. Through `tw.Agent` with `ScriptedModel`, on asyncio and trio.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from pydantic import BaseModel

import toolweave as tw
from toolweave._exceptions import ToolDefinitionError, UsageError
from toolweave.models import ScriptedModel

pytestmark = pytest.mark.anyio


def _undocumented(city: str) -> str:
    return city


def _only_args(city: str) -> str:
    """
    Args:
        city: Where.
    """
    return city


@pytest.mark.parametrize(
    "build",
    [
        lambda: tw.tool(_undocumented),
        lambda: tw.tool()(_undocumented),
        lambda: tw.tool(description="")(_undocumented),
        lambda: tw.tool(description="  \n ")(_undocumented),
        lambda: tw.tool(_only_args),
        lambda: tw.ToolRegistry([_undocumented]),
        lambda: tw.Agent(ScriptedModel([]), [_undocumented]),
    ],
    ids=[
        "bare",
        "called",
        "empty-description",
        "blank-description",
        "docstring-with-only-args",
        "registry-of-a-plain-function",
        "agent-of-a-plain-function",
    ],
)
def test_a_tool_without_a_description_is_refused_at_decoration(
    build: Callable[[], object],
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        build()
    text = str(caught.value)
    assert "tool '_undocumented' has no description" in text or (
        "tool '_only_args' has no description" in text
    ), text
    assert "docstring" in text and "@tool(description=...)" in text


def test_a_description_or_a_docstring_is_enough() -> None:
    given = tw.tool(description="Echo a city.")(_undocumented)
    assert given.description == "Echo a city."
    assert tw.tool(name="w")(_weather).description == "The weather in a city."


def test_a_tool_built_directly_takes_its_description_as_given() -> None:
    """`Tool(...)` (what the integrations and MCP build) is not decorated: unchanged."""

    class Empty(BaseModel):
        pass

    class Direct(tw.tools.Tool):
        async def call(self, args: dict[str, Any], ctx: tw.ToolContext) -> Any:
            return "ok"

    assert Direct(name="d", description="", input_model=Empty).description == ""


def _weather(city: str) -> str:
    """The weather in a city."""
    return city


def _no_hint(city, days: int = 1) -> str:  # type: ignore[no-untyped-def]
    """Forecast."""
    return str(city)


def _no_hint_with_default(city: str, days=3) -> str:  # type: ignore[no-untyped-def]
    """Forecast."""
    return city


@pytest.mark.parametrize(
    ("fn", "param"), [(_no_hint, "city"), (_no_hint_with_default, "days")]
)
def test_an_unannotated_parameter_is_refused_by_name(
    fn: Callable[..., Any], param: str
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        tw.tool(fn)
    text = str(caught.value)
    assert f"tool {fn.__name__!r}: parameter {param!r} has no type annotation" in text
    assert f"`{param}: str`" in text


def test_a_lambda_is_told_to_be_a_def() -> None:
    with pytest.raises(ToolDefinitionError, match="a lambda cannot be annotated"):
        tw.tool(name="double", description="Double x.")(lambda x: 2 * x)


def test_the_context_parameter_is_annotated_and_needs_nothing_else() -> None:
    @tw.tool
    def where(path: str, ctx: tw.ToolContext) -> str:
        """Where a path is."""
        return path

    assert set(where.input_schema()["properties"]) == {"path"}


# -- a tool that returns a coroutine ------------------------------------------------

RAN: list[str] = []


async def _fetch(url: str) -> str:
    RAN.append(url)
    return f"fetched {url}"


@tw.tool
def sync_forgets(url: str) -> Any:
    """A def that calls an async function and returns what it gave."""
    return _fetch(url)


@tw.tool
async def async_forgets(url: str) -> Any:
    """An async def that forgets the await."""
    return _fetch(url)


@tw.tool
async def async_awaits(url: str) -> str:
    """The right way."""
    return await _fetch(url)


class _Input(BaseModel):
    url: str


class _ReturnsACoroutine(tw.tools.Tool):
    """A hand-built tool whose call returns a coroutine it never awaited."""

    def __init__(self) -> None:
        super().__init__(name="hand_built", description="Fetch.", input_model=_Input)

    async def call(self, args: dict[str, Any], ctx: tw.ToolContext) -> Any:
        return _fetch(args["url"])


def _results(result: tw.RunResult) -> list[tw.ToolResult]:
    return [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]


@pytest.mark.parametrize("limit", [None, 30.0], ids=["no-timeout", "timeout"])
async def test_a_returned_coroutine_is_an_error_naming_the_mistake(
    limit: float | None,
) -> None:
    RAN.clear()
    tools = [sync_forgets, async_forgets, _ReturnsACoroutine(), async_awaits]
    calls = [
        tw.ToolCall(f"c{i}", tool.name, {"url": f"u{i}"})
        for i, tool in enumerate(tools)
    ]
    model = ScriptedModel(
        [
            tw.ModelResponse(calls, stop_reason=tw.StopReason.TOOL_USE),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )
    config = tw.AgentConfig(
        execution=tw.execution.ExecutionConfig(default_timeout=limit)
    )
    result = await tw.Agent(model, tools, config=config).run("fetch")
    gc.collect()  # a coroutine left unclosed would warn "never awaited" here
    *wrong, right = _results(result)
    for found in wrong:
        assert found.is_error and not found.synthetic, found
        assert "returned the coroutine _fetch() instead of a result" in found.text
        assert (
            "`await _fetch(...)`" in found.text
            and "closed without running" in found.text
        )
        assert "<coroutine" not in found.text
    assert not right.is_error and right.text == "fetched u3"
    assert RAN == ["u3"]  # the forgotten coroutines never ran
    assert result.completion_reason is tw.CompletionReason.COMPLETED


def test_an_async_generator_is_refused_at_decoration() -> None:
    async def stream(city: str) -> Any:
        """Weather, as it comes."""
        yield city

    with pytest.raises(ToolDefinitionError) as caught:
        tw.tool(stream)
    assert "tool 'stream' is an async generator (it yields)" in str(caught.value)


class _ReturnsAnAsyncGenerator(tw.tools.Tool):
    """A hand-built tool whose call returns an async generator it never iterated."""

    def __init__(self) -> None:
        super().__init__(name="gen_built", description="Fetch.", input_model=_Input)

    async def call(self, args: dict[str, Any], ctx: tw.ToolContext) -> Any:
        async def pages() -> Any:
            RAN.append(args["url"])
            yield "page"

        return pages()


@tw.tool
async def returns_a_task(url: str) -> Any:
    """An async def that starts a task and returns it instead of its result."""
    return asyncio.ensure_future(_fetch(url))


async def test_a_returned_task_or_async_generator_is_an_error_naming_it(
    anyio_backend_name: str,
) -> None:
    RAN.clear()
    tools: list[tw.tools.Tool] = [_ReturnsAnAsyncGenerator()]
    if anyio_backend_name == "asyncio":  # a Task is asyncio's
        tools.append(returns_a_task)
    calls = [
        tw.ToolCall(f"c{i}", t.name, {"url": f"u{i}"}) for i, t in enumerate(tools)
    ]
    model = ScriptedModel(
        [
            tw.ModelResponse(calls, stop_reason=tw.StopReason.TOOL_USE),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )
    result = await tw.Agent(model, tools).run("fetch")
    found = _results(result)
    assert len(found) == len(tools)
    generated = found[0]
    assert generated.is_error and not generated.synthetic
    assert "returned an async generator" in generated.text, generated.text
    assert "<async_generator" not in generated.text
    if anyio_backend_name == "asyncio":
        task = found[1]
        assert task.is_error and "returned an awaitable (Task)" in task.text
        assert "what it did is unknown" in task.text  # it may have run: never "not run"
        await anyio.lowlevel.checkpoint()  # the task the tool started ran: "unknown"
        assert "u1" in RAN
    assert "u0" not in RAN  # the generator never ran


# -- run_sync inside a running loop ---------------------------------------------------


def _agent() -> tw.Agent:
    return tw.Agent(ScriptedModel([tw.ModelResponse([tw.Text("hi")])]), [])


async def test_run_sync_inside_a_running_loop_says_to_await_run(
    anyio_backend_name: str,
) -> None:
    agent = _agent()
    with pytest.raises(UsageError) as caught:
        agent.run_sync("hello")
    text = str(caught.value)
    assert f"inside a running {anyio_backend_name} event loop" in text
    assert "await agent.run(...)" in text
    gc.collect()  # and no coroutine was left never awaited
    result = await agent.run("hello")  # the agent is untouched
    assert result.output == "hi"


async def test_run_sync_from_a_worker_thread_of_a_loop_still_runs() -> None:
    """A thread with no loop of its own may call run_sync (it is not refused)."""
    result = await anyio.to_thread.run_sync(_agent().run_sync, "hello")
    assert result.output == "hi"
