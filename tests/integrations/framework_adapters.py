"""One adapter per framework API (LangGraph has three: a hand-built graph, create_agent,
v2 create_react_agent), so a scenario is written once and asserted on each.

An adapter turns plain async tools ``(name: str) -> str`` into the framework's
tools, wraps them with toolweave's scheduling (or not: the baseline), runs one
model response of calls ``(tool, arg)`` with ids ``c0, c1, ...`` through the
framework's real runner, and reads back what the model was sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolweave.integrations import Declaration
from toolweave.scheduling import ConcurrencyConfig, InterruptToken

ToolFn = Callable[[str], Awaitable[str]]
Specs = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Answer:
    """One call's answer as the model saw it."""

    call_id: str
    text: str
    failed: bool
    """The framework marked it an error (status, outcome or 'Error' text); an
    answer marked neither as an error nor as a success fails the adapter."""


def _flag(marker: str, *, error: str, success: str) -> bool:
    assert marker in (error, success), f"neither {error!r} nor {success!r}: {marker!r}"
    return marker == error


@dataclass
class Box:
    """The framework's tools, with what the run needs besides them."""

    tools: Any
    interrupt: InterruptToken | None = None


@dataclass
class Ran:
    answers: list[Answer]
    final: str
    extra: dict[str, Any] = field(default_factory=dict)


class Adapter(Protocol):
    name: str
    error_options: Mapping[str, Any]
    """Options that make a raising tool an answer (each framework's default differs)."""

    def scheduled(
        self,
        tools: Mapping[str, ToolFn],
        declarations: Mapping[str, Declaration],
        **options: Any,
    ) -> Box: ...

    def plain(self, tools: Mapping[str, ToolFn]) -> Box: ...

    async def run(self, specs: Specs, box: Box) -> Ran: ...


class LangGraphAdapter:
    """`ScheduledToolNode` in a hand-built graph, LangChain's fake chat model."""

    name = "langgraph"
    error_options: Mapping[str, Any] = {}

    def _tools(self, tools: Mapping[str, ToolFn]) -> list[Any]:
        from langchain_core.tools import StructuredTool

        return [
            StructuredTool.from_function(coroutine=fn, name=name, description=name)
            for name, fn in tools.items()
        ]

    def scheduled(
        self,
        tools: Mapping[str, ToolFn],
        declarations: Mapping[str, Declaration],
        **options: Any,
    ) -> Box:
        from toolweave.integrations.langgraph import ScheduledToolNode

        interrupt = options.pop("interrupt", None)
        cap = options.pop("max_concurrency", None)
        if cap is not None:  # the node takes its cap in the scheduler's config
            config = ConcurrencyConfig(max_concurrency=cap)
            options["scheduler_options"] = {"config": config}
        node = ScheduledToolNode(
            self._tools(tools), declarations=dict(declarations), **options
        )
        return Box(node, interrupt)

    def plain(self, tools: Mapping[str, ToolFn]) -> Box:
        from langgraph.prebuilt import ToolNode

        return Box(ToolNode(self._tools(tools)))

    def _app(self, model: Any, box: Box) -> Any:
        from test_langgraph import _graph

        return _graph(model, box.tools)

    async def run(self, specs: Specs, box: Box) -> Ran:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from test_langgraph import RecordingModel

        from toolweave.integrations.langgraph import INTERRUPT_KEY

        calls = AIMessage(
            content="",
            tool_calls=[
                {"name": t, "args": {"name": a}, "id": f"c{i}", "type": "tool_call"}
                for i, (t, a) in enumerate(specs)
            ],
        )
        model = RecordingModel(responses=[calls, AIMessage(content="done")], seen=[])
        config = (
            {"configurable": {INTERRUPT_KEY: box.interrupt}} if box.interrupt else None
        )
        out = await self._app(model, box).ainvoke(
            {"messages": [HumanMessage("go")]}, config
        )
        assert len(model.seen) == 2
        answers = [
            Answer(
                m.tool_call_id,
                str(m.content),
                _flag(m.status, error="error", success="success"),
            )
            for m in model.seen[1]
            if isinstance(m, ToolMessage)
        ]
        return Ran(answers, str(out["messages"][-1].content))


class CreateAgentAdapter(LangGraphAdapter):
    """`ScheduledToolMiddleware` in langchain's `create_agent` (each call its own Send)."""

    name = "langgraph_create_agent"

    def scheduled(
        self,
        tools: Mapping[str, ToolFn],
        declarations: Mapping[str, Declaration],
        **options: Any,
    ) -> Box:
        from toolweave.integrations.langgraph import ScheduledToolMiddleware

        interrupt = options.pop("interrupt", None)
        cap = options.pop("max_concurrency", None)
        if cap is not None:
            options["scheduler_options"] = {
                "config": ConcurrencyConfig(max_concurrency=cap)
            }
        middleware = ScheduledToolMiddleware(dict(declarations), **options)
        return Box((self._tools(tools), [middleware]), interrupt)

    def plain(self, tools: Mapping[str, ToolFn]) -> Box:
        return Box((self._tools(tools), []))

    def _app(self, model: Any, box: Box) -> Any:
        from langchain.agents import create_agent

        tools, middleware = box.tools
        return create_agent(model, tools=tools, middleware=middleware)


class ReactV2Adapter(LangGraphAdapter):
    """`ScheduledToolNode` in `create_react_agent(version="v2")` (each call its own Send)."""

    name = "langgraph_react_v2"

    def _app(self, model: Any, box: Box) -> Any:
        import warnings

        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return create_react_agent(model, box.tools, version="v2")


class PydanticAIAdapter:
    """`ScheduledToolset` in a PydanticAI agent, PydanticAI's FunctionModel."""

    name = "pydantic_ai"
    error_options: Mapping[str, Any] = {"on_error": "fail"}

    def _toolset(self, tools: Mapping[str, ToolFn]) -> Any:
        from pydantic_ai import Tool
        from pydantic_ai.toolsets import FunctionToolset

        return FunctionToolset(
            [Tool(fn, name=name, description=name) for name, fn in tools.items()]
        )

    def scheduled(
        self,
        tools: Mapping[str, ToolFn],
        declarations: Mapping[str, Declaration],
        **options: Any,
    ) -> Box:
        from toolweave.integrations.pydantic_ai import ScheduledToolset

        toolset = ScheduledToolset(
            self._toolset(tools), declarations=dict(declarations), **options
        )
        return Box(toolset)

    def plain(self, tools: Mapping[str, ToolFn]) -> Box:
        return Box(self._toolset(tools))

    async def run(self, specs: Specs, box: Box) -> Ran:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ToolReturnPart
        from pydantic_ai.models.function import FunctionModel
        from test_pydantic_ai import Script

        script = Script(*specs)
        result = await Agent(FunctionModel(script), toolsets=[box.tools]).run("go")
        parts = script.answers()
        assert all(isinstance(p, ToolReturnPart) for p in parts)
        answers = [
            Answer(
                p.tool_call_id,
                str(p.content),
                _flag(p.outcome, error="failed", success="success"),
            )
            for p in parts
        ]
        return Ran(answers, str(result.output))


class OpenAIAgentsAdapter:
    """`scheduled_tools` in an Agents SDK run, the SDK's own ScriptedModel."""

    name = "openai_agents"
    error_options: Mapping[str, Any] = {"on_error": "answer"}

    def _tools(self, tools: Mapping[str, ToolFn]) -> list[Any]:
        from agents import function_tool

        return [
            function_tool(fn, name_override=name, failure_error_function=None)
            for name, fn in tools.items()
        ]

    def scheduled(
        self,
        tools: Mapping[str, ToolFn],
        declarations: Mapping[str, Declaration],
        **options: Any,
    ) -> Box:
        from toolweave.integrations.openai_agents import scheduled_tools

        return Box(scheduled_tools(self._tools(tools), dict(declarations), **options))

    def plain(self, tools: Mapping[str, ToolFn]) -> Box:
        return Box(self._tools(tools))

    async def run(self, specs: Specs, box: Box) -> Ran:
        from agents import Agent, Runner, set_tracing_disabled
        from agents.testing.model import ScriptedModel, assistant_message, function_call

        set_tracing_disabled(True)
        calls = [
            function_call(t, {"name": a}, call_id=f"c{i}")
            for i, (t, a) in enumerate(specs)
        ]
        model = ScriptedModel([calls, [assistant_message("done")]])
        result = await Runner.run(Agent(name="a", model=model, tools=box.tools), "go")
        assert len(model.calls) == 2
        answers = [
            Answer(
                item["call_id"],
                str(item["output"]),
                str(item["output"]).startswith("Error"),
            )
            for item in model.calls[1].input
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        return Ran(answers, str(result.final_output))


ADAPTERS: list[Adapter] = [
    LangGraphAdapter(),
    CreateAgentAdapter(),
    ReactV2Adapter(),
    PydanticAIAdapter(),
    OpenAIAgentsAdapter(),
]
