"""ScheduledToolNode in real LangGraph graphs, driven by LangChain's fake chat model."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from framework_probe import DECLARATIONS, SCENARIO, Probe
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Send
from pydantic import Field

from toolweave.integrations import READ_ONLY
from toolweave.integrations.langgraph import (
    INTERRUPT_KEY,
    ScheduledToolNode,
    SplitBatchWarning,
)


class RecordingModel(FakeMessagesListChatModel):
    """LangChain's fake chat model, recording what each request showed it."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RecordingModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def _calls(*specs: tuple[str, str]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": tool, "args": {"name": arg}, "id": f"c{i}", "type": "tool_call"}
            for i, (tool, arg) in enumerate(specs)
        ],
    )


def _model(*specs: tuple[str, str]) -> RecordingModel:
    return RecordingModel(
        responses=[_calls(*specs), AIMessage(content="done")], seen=[]
    )


def _tools(probe: Probe, *, sync: bool = False) -> list[BaseTool]:
    if sync:
        return [
            StructuredTool.from_function(probe.read_sync, name="read", description="r"),
            StructuredTool.from_function(
                probe.write_sync, name="write", description="w"
            ),
        ]
    return [
        StructuredTool.from_function(
            coroutine=probe.read, name="read", description="r"
        ),
        StructuredTool.from_function(
            coroutine=probe.write, name="write", description="w"
        ),
    ]


def _graph(model: RecordingModel, node: ToolNode) -> Any:
    return _graph_with(model, node, None)


def _graph_with(model: RecordingModel, node: ToolNode, checkpointer: Any) -> Any:
    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", node)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


def _answers(model: RecordingModel) -> list[ToolMessage]:
    assert len(model.seen) == 2
    return [m for m in model.seen[1] if isinstance(m, ToolMessage)]


@pytest.mark.anyio
async def test_react_agent_overlaps_reads_and_isolates_the_write() -> None:
    from langgraph.prebuilt import create_react_agent

    probe = Probe()
    model = _model(*SCENARIO)
    node = ScheduledToolNode(_tools(probe), declarations=DECLARATIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(model, node, version="v1")
    out = await agent.ainvoke({"messages": [HumanMessage("go")]})
    probe.check()
    answers = _answers(model)
    assert [m.tool_call_id for m in answers] == ["c0", "c1", "c2", "c3", "c4"]
    assert [m.content for m in answers] == [
        "value of a",
        "value of b",
        "wrote W",
        "value of c",
        "value of d",
    ]
    assert out["messages"][-1].content == "done"


def test_hand_built_graph_sync_path() -> None:
    probe = Probe()
    model = _model(*SCENARIO)
    node = ScheduledToolNode(_tools(probe, sync=True), declarations=DECLARATIONS)
    out = _graph(model, node).invoke({"messages": [HumanMessage("go")]})
    probe.check()
    assert [m.tool_call_id for m in _answers(model)] == ["c0", "c1", "c2", "c3", "c4"]
    assert out["messages"][-1].content == "done"


@pytest.mark.anyio
async def test_a_lone_call_without_its_ai_message_runs_and_the_node_warns() -> None:
    """A Send of one call whose state holds no AI message with it: nothing to order by."""
    probe = Probe()
    node = ScheduledToolNode(_tools(probe), declarations=DECLARATIONS)
    call = _calls(("write", "W")).tool_calls[0]

    def fan_out(state: MessagesState) -> list[Send]:
        del state
        payload = {"__type": "tool_call_with_context", "tool_call": call, "state": {}}
        return [Send("tools", payload)]

    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_conditional_edges(START, fan_out, ["tools"])
    with pytest.warns(SplitBatchWarning, match="cannot be ordered"):
        out = await graph.compile().ainvoke({"messages": [HumanMessage("go")]})
    assert [m.content for m in out["messages"] if isinstance(m, ToolMessage)] == [
        "wrote W"
    ]


@pytest.mark.anyio
async def test_unknown_tool_is_answered_by_the_node() -> None:
    probe = Probe()
    model = _model(("write", "W"), ("nope", "x"))
    node = ScheduledToolNode(_tools(probe), declarations=DECLARATIONS)
    await _graph(model, node).ainvoke({"messages": [HumanMessage("go")]})
    answers = _answers(model)
    assert [m.status for m in answers] == ["success", "error"]
    assert "nope" in str(answers[1].content)


@pytest.mark.anyio
async def test_a_token_of_the_wrong_type_is_refused() -> None:
    model = _model(("write", "W"))
    node = ScheduledToolNode(_tools(Probe()), declarations=DECLARATIONS)
    with pytest.raises(TypeError, match="InterruptToken"):
        await _graph(model, node).ainvoke(
            {"messages": [HumanMessage("go")]}, {"configurable": {INTERRUPT_KEY: "yes"}}
        )


@pytest.mark.anyio
async def test_langgraph_interrupt_waits_for_siblings_then_pauses_the_graph() -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command, interrupt

    probe = Probe()

    async def ask(name: str) -> str:
        answer = interrupt(f"approve {name}?")
        return f"approved: {answer}"

    tools = [
        *_tools(probe),
        StructuredTool.from_function(coroutine=ask, name="ask", description="a"),
    ]
    model = RecordingModel(
        responses=[
            _calls(("read", "a"), ("ask", "x"), ("read", "b")),
            AIMessage("done"),
        ],
        seen=[],
    )
    node = ScheduledToolNode(tools, declarations={**DECLARATIONS, "ask": READ_ONLY})
    graph = _graph_with(model, node, InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    paused = await graph.ainvoke({"messages": [HumanMessage("go")]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["approve x?"]
    assert {("end", "a"), ("end", "b")} <= set(probe.log)  # siblings finished first
    probe = Probe()  # LangGraph re-runs the node on resume, as for ToolNode
    tools[0].coroutine = probe.read  # type: ignore[attr-defined]
    await graph.ainvoke(Command(resume="yes"), config)
    answers = _answers(model)
    assert [m.content for m in answers] == ["value of a", "approved: yes", "value of b"]


@pytest.mark.anyio
async def test_lifecycle_hooks_rewrite_and_permissions_deny() -> None:
    from toolweave.execution import Hooks, PermissionRules, PreToolUseDecision

    seen: list[str] = []

    async def echo(name: str) -> str:
        seen.append(name)
        return f"echo {name}"

    async def rm(name: str) -> str:
        seen.append(f"rm {name}")
        return "removed"

    hooks = Hooks()

    @hooks.pre_tool_use("echo")
    def shout(data: Any) -> PreToolUseDecision:
        return PreToolUseDecision(updated_input={"name": data.input["name"].upper()})

    tools = [
        StructuredTool.from_function(coroutine=f, name=f.__name__, description="t")
        for f in (echo, rm)
    ]
    model = _model(("echo", "hi"), ("rm", "x"))
    node = ScheduledToolNode(
        tools,
        declarations={"echo": READ_ONLY},
        scheduler_options={"hooks": hooks, "permissions": PermissionRules(deny=["rm"])},
    )
    await _graph(model, node).ainvoke({"messages": [HumanMessage("go")]})
    answers = _answers(model)
    assert (answers[0].status, answers[0].content) == ("success", "echo HI")
    assert answers[1].status == "error" and "rm" in str(answers[1].content)
    assert seen == ["HI"]  # the rewrite reached the tool; the denied call never ran
