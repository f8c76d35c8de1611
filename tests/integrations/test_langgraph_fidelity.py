"""ScheduledToolNode against ToolNode: the same scenario both ways, the same outcome.

Each case builds a real LangGraph graph twice, once with LangGraph's `ToolNode` and
once with `ScheduledToolNode` (every tool declared read-only, so scheduling is not
what differs), runs it on the sync and the async path, and compares what the
model would see next (every message of the final state, with message ids
dropped), where the graph went, and any exception the run raised.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio
import pytest
from framework_probe import FRAGILE_DECLARATION
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import InjectedState, InjectedStore, ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolRuntime
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel
from typing_extensions import TypedDict

from toolweave.integrations import READ_ONLY
from toolweave.integrations.langgraph import ScheduledToolNode


class State(TypedDict, total=False):
    messages: Annotated[list[BaseMessage], add_messages]
    note: str
    visited: Annotated[list[str], operator.add]


# ---------------------------------------------------------------- tools


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return f"echo {text}"


@tool
async def aecho(text: str) -> str:
    """Echo the text (async)."""
    return f"aecho {text}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers (a non-str result)."""
    return a + b


@tool
def blocks(text: str) -> list[dict[str, str]]:
    """Content blocks."""
    return [{"type": "text", "text": text}, {"type": "text", "text": "second"}]


@tool
def as_dict(text: str) -> dict[str, Any]:
    """A dict result (JSON-encoded by the node)."""
    return {"text": text, "n": [1, 2]}


@tool(response_format="content_and_artifact")
def with_artifact(text: str) -> tuple[str, dict[str, str]]:
    """Content and an artifact."""
    return f"content {text}", {"raw": text}


class Boom(Exception):
    """A tool's own exception type."""


@tool
def fail_value(text: str) -> str:
    """Raise ValueError."""
    raise ValueError(f"bad {text}")


@tool
def fail_key(text: str) -> str:
    """Raise KeyError."""
    raise KeyError(text)


@tool
def fail_own(text: str) -> str:
    """Raise a custom exception."""
    raise Boom(f"boom {text}")


@tool
def set_note(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """A Command updating state."""
    return Command(
        update={
            "note": text,
            "messages": [ToolMessage(f"noted {text}", tool_call_id=tool_call_id)],
        }
    )


@tool
def jump(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """A Command with goto."""
    return Command(
        goto="other",
        update={"messages": [ToolMessage(f"jumped {text}", tool_call_id=tool_call_id)]},
    )


@tool
def mixed(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> list[Any]:
    """A list mixing a Command and the terminating ToolMessage."""
    return [
        Command(update={"note": f"mixed {text}"}),
        ToolMessage(f"mixed {text}", tool_call_id=tool_call_id),
    ]


@tool
def bad_command(text: str) -> Command:
    """A Command without its ToolMessage (the node's ValueError)."""
    return Command(update={"note": text})


@tool
def send_parent(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """A Command.PARENT goto of Sends (combined by the node)."""
    return Command(graph=Command.PARENT, goto=[Send("other", {"note": text})])


@tool
def read_state(text: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Sees the graph state."""
    return f"{text}: {len(state['messages'])} messages, note={state.get('note')}"


@tool
def read_field(text: str, note: Annotated[str, InjectedState("note")]) -> str:
    """Sees one state field."""
    return f"{text}: note={note}"


@tool
def use_store(text: str, store: Annotated[Any, InjectedStore()]) -> str:
    """Writes and reads the store."""
    store.put(("ns",), text, {"v": text})
    return f"stored {store.get(('ns',), text).value}"


@tool
def use_runtime(text: str, runtime: ToolRuntime) -> str:
    """Sees the ToolRuntime."""
    return f"{text}: id={runtime.tool_call_id} tools={len(runtime.tools)}"


@tool(return_direct=True)
def final(text: str) -> str:
    """return_direct."""
    return f"final {text}"


@tool
def ask(text: str) -> str:
    """LangGraph interrupt()."""
    answer = interrupt(f"approve {text}?")
    return f"{text}: {answer}"


@tool
def big(text: str) -> str:
    """A large result (toolweave's result budgets must not touch it)."""
    return text * 300_000


@tool
def empty(text: str) -> str:
    """An empty result."""
    return ""


@tool
def nothing(text: str) -> None:
    """No result."""


@tool
def own_message(
    text: str, tool_call_id: Annotated[str, InjectedToolCallId]
) -> ToolMessage:
    """Returns its ToolMessage itself."""
    return ToolMessage(f"own {text}", tool_call_id=tool_call_id, artifact={"a": 1})


def _tool_level_handler(e: Exception) -> str:
    return f"tool handled: {e}"


def _raises_tool_exception(text: str) -> str:
    from langchain_core.tools import ToolException

    raise ToolException(f"tool exception {text}")


def _validated(count: int) -> str:
    return f"count {count}"


self_handled = StructuredTool.from_function(
    _raises_tool_exception,
    name="self_handled",
    description="Handles its own ToolException.",
    handle_tool_error=_tool_level_handler,
)
self_validated = StructuredTool.from_function(
    _validated,
    name="self_validated",
    description="Handles its own validation error.",
    handle_validation_error="bad input, says the tool",
)


ALL_TOOLS: list[BaseTool] = [
    big,
    empty,
    nothing,
    own_message,
    self_handled,
    self_validated,
    echo,
    aecho,
    add,
    blocks,
    as_dict,
    with_artifact,
    fail_value,
    fail_key,
    fail_own,
    set_note,
    jump,
    mixed,
    bad_command,
    send_parent,
    read_state,
    read_field,
    use_store,
    use_runtime,
    final,
    ask,
]
DECLARED = {t.name: READ_ONLY for t in ALL_TOOLS}
FRAGILE = {t.name: FRAGILE_DECLARATION for t in ALL_TOOLS}
"""Input-dependent declarations that raise on calls without a "text" (fail closed)."""


def _call(name: str, args: dict[str, Any] | None = None, id: str = "") -> Any:
    return {
        "name": name,
        "args": {"text": "x"} if args is None else args,
        "id": id,
        "type": "tool_call",
    }


def _message(*calls: Any) -> AIMessage:
    numbered = [{**c, "id": c["id"] or f"c{i}"} for i, c in enumerate(calls)]
    return AIMessage(content="", tool_calls=numbered, id="ai")


# ---------------------------------------------------------------- handlers


def on_value(e: ValueError) -> str:
    return f"handled value: {e}"


def on_any(e: Exception) -> str:
    return f"handled: {type(e).__name__}"


def wrap_upper(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
    call = request.tool_call
    return execute(request.override(tool_call={**call, "args": {"text": "WRAPPED"}}))


def wrap_short(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
    return ToolMessage(
        "short-circuited",
        name=request.tool_call["name"],
        tool_call_id=request.tool_call["id"],
    )


def wrap_raise(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
    raise RuntimeError("wrapper failed")


def wrap_retry(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
    first = execute(request)
    if isinstance(first, ToolMessage) and first.status == "error":
        return execute(request.override(tool_call={**request.tool_call, "args": {}}))
    return first


async def awrap_upper(request: ToolCallRequest, execute: Callable[..., Any]) -> Any:
    call = request.tool_call
    return await execute(
        request.override(tool_call={**call, "args": {"text": "AWRAPPED"}})
    )


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    id: str
    calls: list[Any]
    node: dict[str, Any] = field(default_factory=dict)
    store: bool = False
    paths: tuple[str, ...] = ("sync", "async")


CASES = [
    Case("plain", [_call("echo"), _call("add", {"a": 1, "b": 2})]),
    Case("plain-async-tool", [_call("echo"), _call("aecho")], paths=("async",)),
    Case("content-blocks", [_call("blocks"), _call("as_dict")]),
    Case("artifact", [_call("with_artifact")]),
    Case("big-result", [_call("big"), _call("echo")]),
    Case("empty-and-none-results", [_call("empty"), _call("nothing")]),
    Case("tool-returns-tool-message", [_call("own_message")]),
    Case("tool-handles-its-error", [_call("self_handled"), _call("echo")]),
    Case("tool-handles-its-validation", [_call("self_validated", {"count": "many"})]),
    Case("unknown-tool", [_call("echo"), _call("nope")]),
    Case("invalid-args-missing", [_call("add", {"a": 1})]),
    Case("invalid-args-type", [_call("add", {"a": "one", "b": 2}), _call("echo")]),
    Case(
        "raise-true", [_call("fail_value"), _call("echo")], {"handle_tool_errors": True}
    ),
    Case("raise-str", [_call("fail_own")], {"handle_tool_errors": "it failed"}),
    Case(
        "raise-callable-typed-match",
        [_call("fail_value")],
        {"handle_tool_errors": on_value},
    ),
    Case("raise-callable-any", [_call("fail_key")], {"handle_tool_errors": on_any}),
    Case("raise-type", [_call("fail_own")], {"handle_tool_errors": Boom}),
    Case(
        "raise-tuple",
        [_call("fail_value"), _call("fail_key")],
        {"handle_tool_errors": (ValueError, KeyError)},
    ),
    Case(
        "invalid-args-handled-true",
        [_call("add", {"a": 1})],
        {"handle_tool_errors": True},
    ),
    Case("command-update", [_call("set_note"), _call("echo")]),
    Case("command-goto", [_call("jump"), _call("echo")]),
    Case("command-list", [_call("mixed"), _call("echo")]),
    Case("command-invalid", [_call("bad_command")], {"handle_tool_errors": True}),
    Case("command-parent-send", [_call("send_parent"), _call("echo")]),
    Case("injected-state", [_call("read_state"), _call("read_field")]),
    Case("injected-store", [_call("use_store")], store=True),
    Case("tool-runtime", [_call("use_runtime"), _call("use_runtime")]),
    Case("wrap-rewrite", [_call("echo")], {"wrap_tool_call": wrap_upper}),
    Case("wrap-short-circuit", [_call("nope")], {"wrap_tool_call": wrap_short}),
    Case(
        "wrap-raises-handled",
        [_call("echo")],
        {"wrap_tool_call": wrap_raise, "handle_tool_errors": True},
    ),
    Case(
        "wrap-retries",
        [_call("add", {"a": "x"})],
        {"wrap_tool_call": wrap_retry, "handle_tool_errors": True},
    ),
    Case(
        "awrap-rewrite",
        [_call("aecho")],
        {"awrap_tool_call": awrap_upper, "wrap_tool_call": wrap_upper},
        paths=("async",),
    ),
    Case(
        "duplicate-ids",
        [_call("echo", id="same"), _call("add", {"a": 1, "b": 2}, id="same")],
    ),
    Case("empty-id", [_call("echo", id="")]),
    Case("empty-tool-calls", []),
]

ABORTING = [
    # (case, the call index that raises): ToolNode aborts the graph with its error
    (
        Case(
            "raise-false",
            [_call("fail_value"), _call("echo")],
            {"handle_tool_errors": False},
        ),
        0,
    ),
    (Case("raise-default", [_call("echo"), _call("fail_value")]), 1),
    (
        Case(
            "raise-callable-typed-miss",
            [_call("fail_key")],
            {"handle_tool_errors": on_value},
        ),
        0,
    ),
    (
        Case(
            "raise-tuple-miss",
            [_call("echo"), _call("fail_own")],
            {"handle_tool_errors": (ValueError,)},
        ),
        1,
    ),
    (Case("command-invalid-default", [_call("bad_command")]), 0),
    (
        Case(
            "wrap-raises-false",
            [_call("echo")],
            {"wrap_tool_call": wrap_raise, "handle_tool_errors": False},
        ),
        0,
    ),
    (
        Case(
            "injected-store-missing",
            [_call("use_store"), _call("echo")],
            {"handle_tool_errors": True},
        ),
        0,
    ),
    (Case("async-only-tool-on-sync-path", [_call("aecho"), _call("echo")]), 0),
]
"""Cases where ToolNode raises out of the graph (on the paths it does so)."""


def _build(node: ToolNode, *, store: bool, checkpointer: Any = None) -> Any:
    def other(state: State) -> dict[str, Any]:
        return {"visited": [f"other:{state.get('note')}"]}

    graph = StateGraph(State)
    graph.add_node("tools", node)
    graph.add_node("other", other)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    graph.add_edge("other", END)
    return graph.compile(
        store=InMemoryStore() if store else None, checkpointer=checkpointer
    )


def _plain(message: BaseMessage) -> dict[str, Any]:
    data = message.model_dump()
    data.pop("id", None)
    return data


def _observe(out: dict[str, Any]) -> dict[str, Any]:
    return {
        "messages": [_plain(m) for m in out["messages"]],
        "note": out.get("note"),
        "visited": out.get("visited"),
    }


def _initial(case: Case) -> dict[str, Any]:
    if not case.calls:
        return {
            "messages": [HumanMessage("go"), AIMessage(content="", id="ai")],
            "note": "n0",
        }
    return {"messages": [HumanMessage("go"), _message(*case.calls)], "note": "n0"}


def _node(kind: str, case: Case) -> ToolNode:
    if kind == "plain":
        return ToolNode(ALL_TOOLS, **case.node)
    on_error = "raise" if kind == "scheduled-raise" else "answer"
    declared = {"undeclared": {}, "fragile": FRAGILE}.get(kind, DECLARED)
    return ScheduledToolNode(
        ALL_TOOLS, declarations=declared, on_error=on_error, **case.node
    )


async def _run(kind: str, case: Case, path: str) -> Any:
    graph = _build(_node(kind, case), store=case.store)
    try:
        if path == "sync":  # on a thread with no event loop, as a sync app runs it
            out = await anyio.to_thread.run_sync(graph.invoke, _initial(case))
        else:
            out = await graph.ainvoke(_initial(case))
    except Exception as exc:  # the outcome compared
        return exc
    return _observe(out)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["scheduled", "undeclared", "fragile"])
@pytest.mark.parametrize(
    ("case", "path"),
    [pytest.param(c, p, id=f"{c.id}-{p}") for c in CASES for p in c.paths],
)
async def test_same_outcome_as_tool_node(case: Case, path: str, kind: str) -> None:
    expected = _comparable(await _run("plain", case, path))
    assert _comparable(await _run(kind, case, path)) == expected


def _comparable(outcome: Any) -> Any:
    if isinstance(outcome, Exception):
        return type(outcome), str(outcome)
    return outcome


def _raised(outcome: Any) -> tuple[type[BaseException], str]:
    assert isinstance(outcome, Exception), outcome
    return type(outcome), str(outcome)


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize(
    ("case", "failing"), ABORTING, ids=lambda c: getattr(c, "id", "")
)
async def test_where_tool_node_aborts(case: Case, failing: int, path: str) -> None:
    """on_error="raise" aborts with ToolNode's error; "answer" answers that call only."""
    expected = await _run("plain", case, path)
    if case.id == "async-only-tool-on-sync-path" and path == "async":
        assert not isinstance(expected, Exception)  # runs fine there
        return
    error = _raised(expected)
    assert _raised(await _run("scheduled-raise", case, path)) == error
    answered = await _run("scheduled", case, path)
    messages = answered["messages"][2:]
    assert [m["tool_call_id"] for m in messages] == [
        f"c{i}" for i in range(len(case.calls))
    ]
    assert messages[failing]["status"] == "error"
    assert messages[failing]["content"] == (
        f"Error: {error[0](*expected.args)!r}\n Please fix your mistakes."
    )
    siblings = Case("siblings", [c for i, c in enumerate(case.calls) if i != failing])
    alone = await _run("plain", siblings, path)
    rest = [m for i, m in enumerate(messages) if i != failing]
    assert [m["content"] for m in rest] == [m["content"] for m in alone["messages"][2:]]


# ------------------------------------------------- graph features, both ways


@tool
def stream_progress(text: str) -> str:
    """Writes to LangGraph's custom stream."""
    from langgraph.config import get_stream_writer

    get_stream_writer()({"progress": text})
    return f"streamed {text}"


@tool
def read_config(text: str, config: RunnableConfig) -> str:
    """Sees the run's config."""
    return f"{text}: user={config['configurable'].get('user')}"


FEATURE_TOOLS: list[BaseTool] = [*ALL_TOOLS, stream_progress, read_config]


def _feature_node(kind: str, **options: Any) -> ToolNode:
    if kind == "plain":
        return ToolNode(FEATURE_TOOLS, **options)
    declared = (
        {} if kind == "undeclared" else {t.name: READ_ONLY for t in FEATURE_TOOLS}
    )
    return ScheduledToolNode(FEATURE_TOOLS, declarations=declared, **options)


def _tool_messages(messages: list[Any]) -> list[dict[str, Any]]:
    return [_plain(m) for m in messages if isinstance(m, ToolMessage)]


async def _interrupt_and_resume(kind: str, path: str) -> list[Any]:
    graph = _build(_feature_node(kind), store=False, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    message = _message(_call("echo"), _call("ask"), _call("add", {"a": 1, "b": 2}))
    first: Any = {"messages": [HumanMessage("go"), message]}

    def invoke(value: Any) -> Any:
        return graph.invoke(value, config)

    seen = []
    for value in (first, Command(resume="yes")):
        if path == "sync":
            out = await anyio.to_thread.run_sync(invoke, value)
        else:
            out = await graph.ainvoke(value, config)
        seen.append(
            (
                [i.value for i in out.get("__interrupt__", [])],
                _tool_messages(out["messages"]),
            )
        )
    return seen


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["scheduled", "undeclared"])
@pytest.mark.parametrize("path", ["sync", "async"])
async def test_langgraph_interrupt_and_resume_as_tool_node(
    path: str, kind: str
) -> None:
    expected = await _interrupt_and_resume("plain", path)
    assert expected[0][0] == ["approve x?"]
    assert await _interrupt_and_resume(kind, path) == expected


async def _stream_custom(kind: str, path: str) -> list[Any]:
    graph = _build(_feature_node(kind), store=False)
    value = {"messages": [HumanMessage("go"), _message(_call("stream_progress"))]}
    if path == "sync":
        return await anyio.to_thread.run_sync(
            lambda: list(graph.stream(value, stream_mode="custom"))
        )
    return [chunk async for chunk in graph.astream(value, stream_mode="custom")]


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
async def test_custom_stream_writer_as_tool_node(path: str) -> None:
    expected = await _stream_custom("plain", path)
    assert expected == [{"progress": "x"}]
    assert await _stream_custom("scheduled", path) == expected


async def _with_config(kind: str, path: str) -> list[dict[str, Any]]:
    graph = _build(_feature_node(kind), store=False)
    value = {"messages": [HumanMessage("go"), _message(_call("read_config"))]}
    config: Any = {"configurable": {"user": "ann"}}
    if path == "sync":
        out = await anyio.to_thread.run_sync(lambda: graph.invoke(value, config))
    else:
        out = await graph.ainvoke(value, config)
    return _tool_messages(out["messages"])


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
async def test_runnable_config_reaches_the_tool_as_with_tool_node(path: str) -> None:
    expected = await _with_config("plain", path)
    assert expected[0]["content"] == "x: user=ann"
    assert await _with_config("scheduled", path) == expected


DIRECT_INPUTS = {
    "messages-list": lambda: [_message(_call("echo"), _call("add", {"a": 1, "b": 2}))],
    "state-dict": lambda: {"messages": [_message(_call("echo"))]},
    "tool-calls-list": lambda: [_call("echo", id="t0"), _call("blocks", id="t1")],
    "command-list-input": lambda: [_message(_call("echo"))],
}


async def _direct(kind: str, name: str, path: str) -> Any:
    node = _feature_node(kind)
    value = DIRECT_INPUTS[name]()
    try:
        if path == "sync":
            out = await anyio.to_thread.run_sync(node.invoke, value)
        else:
            out = await node.ainvoke(value)
    except Exception as exc:  # the outcome compared
        return type(exc), str(exc)
    messages = out if isinstance(out, list) else out["messages"]
    return [_plain(m) for m in messages]


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize("name", list(DIRECT_INPUTS))
async def test_node_invoked_directly_as_tool_node(name: str, path: str) -> None:
    expected = await _direct("plain", name, path)
    assert await _direct("scheduled", name, path) == expected


def _react_model(*calls: Any) -> Any:
    from langchain_core.language_models.fake_chat_models import (
        FakeMessagesListChatModel,
    )

    class Model(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    return Model(responses=[_message(*calls), AIMessage("done", id="end")])


async def _react(kind: str, calls: list[Any], path: str, version: str) -> Any:
    import warnings

    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        # create_react_agent is deprecated; v2 makes the node warn SplitBatchWarning
        warnings.simplefilter("ignore")
        agent = create_react_agent(
            _react_model(*calls), _feature_node(kind), version=version
        )
        value = {"messages": [HumanMessage("go")]}
        if path == "sync":
            out = await anyio.to_thread.run_sync(agent.invoke, value)
        else:
            out = await agent.ainvoke(value)
    return [_plain(m) for m in out["messages"]]


REACT_CASES = {
    "return-direct": [_call("final")],
    "return-direct-with-sibling": [_call("echo"), _call("final")],
    "no-return-direct": [_call("echo"), _call("add", {"a": 1, "b": 2})],
    "command-update": [_call("set_note"), _call("echo")],
}


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("name", list(REACT_CASES))
async def test_create_react_agent_as_tool_node(
    name: str, version: str, path: str
) -> None:
    expected = await _react("plain", REACT_CASES[name], path, version)
    assert await _react("scheduled", REACT_CASES[name], path, version) == expected


@pytest.mark.anyio
async def test_sync_invoke_on_a_thread_whose_event_loop_runs() -> None:
    """graph.invoke called from async code (a notebook, an anyio test) works as ToolNode's."""
    case = Case("in-loop", [_call("echo"), _call("add", {"a": 1, "b": 2})])
    outcomes = []
    for kind in ("plain", "scheduled"):
        graph = _build(_node(kind, case), store=False)
        outcomes.append(_observe(graph.invoke(_initial(case))))
    assert outcomes[1] == outcomes[0]
    assert outcomes[0]["messages"][-1]["content"] == "3"


@tool
async def ask_first(text: str) -> str:
    """LangGraph interrupt(), async: ToolNode's gather runs it before later calls.

    (Sync tools run on executor threads there, in no fixed order, so which of two
    interrupts surfaces first would not be ToolNode's to tell.)
    """
    answer = interrupt(f"approve {text}?")
    return f"{text}: {answer}"


@tool
async def ask_too(text: str) -> str:
    """A second LangGraph interrupt() in the same message."""
    answer = interrupt(f"also {text}?")
    return f"{text} too: {answer}"


async def _two_interrupts(kind: str, declared: bool) -> list[Any]:
    tools = [*FEATURE_TOOLS, ask_first, ask_too]
    if kind == "plain":
        node: ToolNode = ToolNode(tools)
    else:
        declarations = {t.name: READ_ONLY for t in tools} if declared else {}
        node = ScheduledToolNode(tools, declarations=declarations)
    graph = _build(node, store=False, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    message = _message(_call("ask_first"), _call("echo"), _call("ask_too"))
    value: Any = {"messages": [HumanMessage("go"), message]}
    seen = []
    for _ in range(3):
        out = await graph.ainvoke(value, config)
        pending = out.get("__interrupt__", [])
        seen.append((sorted(i.value for i in pending), _tool_messages(out["messages"])))
        if not pending:
            break
        value = Command(resume={i.id: f"yes to {i.value}" for i in pending})
    return seen


@pytest.mark.anyio
@pytest.mark.parametrize("declared", [True, False])
async def test_two_langgraph_interrupts_in_one_message_as_tool_node(
    declared: bool,
) -> None:
    expected = await _two_interrupts("plain", declared)
    assert await _two_interrupts("scheduled", declared) == expected


class ModelState(BaseModel):
    messages: Annotated[list[BaseMessage], add_messages]
    note: str = "n0"


@tool
def read_model_state(text: str, note: Annotated[str, InjectedState("note")]) -> str:
    """Reads a field of a pydantic state."""
    return f"{text}: note={note}"


async def _pydantic_state(kind: str, path: str) -> Any:
    tools = [echo, read_model_state, set_note]
    node: ToolNode = (
        ToolNode(tools)
        if kind == "plain"
        else ScheduledToolNode(tools, declarations={t.name: READ_ONLY for t in tools})
    )
    graph = StateGraph(ModelState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()
    message = _message(_call("echo"), _call("read_model_state"), _call("set_note"))
    value = {"messages": [HumanMessage("go"), message]}
    if path == "sync":
        out = await anyio.to_thread.run_sync(app.invoke, value)
    else:
        out = await app.ainvoke(value)
    return out["note"], _tool_messages(out["messages"])


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
async def test_pydantic_state_as_tool_node(path: str) -> None:
    expected = await _pydantic_state("plain", path)
    assert expected[0] == "x"
    assert await _pydantic_state("scheduled", path) == expected


async def _updates(kind: str, case: Case) -> list[Any]:
    graph = _build(_node(kind, case), store=False)
    chunks = [
        chunk async for chunk in graph.astream(_initial(case), stream_mode="updates")
    ]
    return [
        {
            node: [
                [_plain(m) for m in update.get("messages", [])]
                if isinstance(update, dict)
                else repr(update)
                for update in (updates if isinstance(updates, list) else [updates])
            ]
            for node, updates in chunk.items()
        }
        for chunk in chunks
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "case",
    [
        c
        for c in CASES
        if c.id in ("plain", "command-update", "command-goto", "command-list")
    ],
    ids=lambda c: c.id,
)
async def test_streamed_updates_as_tool_node(case: Case) -> None:
    expected = await _updates("plain", case)
    assert expected
    assert await _updates("scheduled", case) == expected


@pytest.mark.anyio
async def test_runnable_config_max_concurrency_is_reached_and_never_exceeded() -> None:
    """The run's max_concurrency caps the batch (ToolNode obeys it on its sync path)."""
    inside = 0
    peak = 0
    release = anyio.Event()
    reached = anyio.Event()

    @tool
    async def hold(text: str) -> str:
        """Stays inside until released."""
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        if inside == 2:
            reached.set()
        await release.wait()
        inside -= 1
        return text

    node = ScheduledToolNode([hold], declarations={"hold": READ_ONLY})
    graph = _build(node, store=False)
    message = _message(*[_call("hold", {"text": str(i)}) for i in range(5)])
    out: dict[str, Any] = {}

    async def run() -> None:
        value = {"messages": [HumanMessage("go"), message]}
        out.update(await graph.ainvoke(value, {"max_concurrency": 2}))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(10):  # deadlock guard only
            await reached.wait()
        await anyio.wait_all_tasks_blocked()  # a third call would be inside now
        assert inside == 2
        release.set()
    assert peak == 2
    assert [m.content for m in out["messages"][2:]] == ["0", "1", "2", "3", "4"]


def test_runnable_config_max_concurrency_on_the_sync_path() -> None:
    """Sync tools on worker threads: two meet inside, a third never joins them."""
    import threading

    lock = threading.Lock()
    inside = 0
    peak = 0
    pair = threading.Barrier(2)

    def hold(text: str) -> str:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        pair.wait(timeout=10)  # two calls inside at once, or a deadlock error
        with lock:
            inside -= 1
        return text

    outcomes = []
    for kind in ("plain", "scheduled"):
        hold_tool = StructuredTool.from_function(hold, name="hold", description="h")
        node: ToolNode = (
            ToolNode([hold_tool])
            if kind == "plain"
            else ScheduledToolNode([hold_tool], declarations={"hold": READ_ONLY})
        )
        message = _message(*[_call("hold", {"text": str(i)}) for i in range(4)])
        out = _build(node, store=False).invoke(
            {"messages": [HumanMessage("go"), message]}, {"max_concurrency": 2}
        )
        outcomes.append([m.content for m in out["messages"][2:]])
        assert peak == 2
        peak = 0
    assert outcomes == [["0", "1", "2", "3"]] * 2


class Verdict(BaseModel):
    ok: bool


@tool
def ask_typed(text: str) -> str:
    """LangGraph interrupt() whose answer must match a schema."""
    answer = interrupt(f"ok {text}?", response_schema=Verdict)
    return f"{text}: {answer}"


async def _typed_resume(kind: str, on_error: str) -> list[Any]:
    tools = [echo, ask_typed]
    node: ToolNode = (
        ToolNode(tools)
        if kind == "plain"
        else ScheduledToolNode(
            tools, declarations={t.name: READ_ONLY for t in tools}, on_error=on_error
        )
    )
    graph = _build(node, store=False, checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    message = _message(_call("echo"), _call("ask_typed"))
    seen: list[Any] = []
    for value in (
        {"messages": [HumanMessage("go"), message]},
        Command(resume={"ok": "not a bool"}),  # does not match: asked again
        Command(resume={"ok": True}),
    ):
        try:
            out = await graph.ainvoke(value, config)
        except Exception as exc:  # the outcome compared
            seen.append((type(exc).__name__, "invalid resume"))
            continue
        pending = [i.value for i in out.get("__interrupt__", [])]
        seen.append((pending, _tool_messages(out["messages"])))
    return seen


@pytest.mark.anyio
@pytest.mark.parametrize("on_error", ["answer", "raise"])
async def test_an_invalid_resume_fails_the_run_as_with_tool_node(on_error: str) -> None:
    """No setting answers a resume value that does not match the interrupt's schema."""
    expected = await _typed_resume("plain", on_error)
    assert expected[1] == ("ValidationError", "invalid resume")
    assert await _typed_resume("scheduled", on_error) == expected


async def _tool_events(kind: str, path: str) -> list[Any]:
    from langchain_core.callbacks import BaseCallbackHandler

    seen: list[Any] = []

    class Recorder(BaseCallbackHandler):
        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            seen.append(("start", serialized.get("name"), input_str))

        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            seen.append(("end", getattr(output, "tool_call_id", None), str(output)))

        def on_tool_error(self, error: BaseException, **kwargs: Any) -> None:
            seen.append(("error", repr(error)))

    case = Case(
        "events",
        [_call("echo"), _call("add", {"a": 1, "b": 2}), _call("fail_value")],
        {"handle_tool_errors": True},
    )
    graph = _build(
        _node("plain" if kind == "plain" else "scheduled", case), store=False
    )
    config: Any = {"callbacks": [Recorder()]}
    if path == "sync":
        await anyio.to_thread.run_sync(lambda: graph.invoke(_initial(case), config))
    else:
        await graph.ainvoke(_initial(case), {**config})
    return sorted(seen)


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
async def test_callbacks_see_the_same_tool_runs_as_with_tool_node(path: str) -> None:
    """The same on_tool_start / on_tool_end / on_tool_error events (order aside)."""
    expected = await _tool_events("plain", path)
    assert [e[0] for e in expected].count("start") == 3
    assert await _tool_events("scheduled", path) == expected


async def _with_retry_policy(kind: str) -> Any:
    from langgraph.types import RetryPolicy

    attempts: list[str] = []

    @tool
    def flaky(text: str) -> str:
        """Fails on its first attempt."""
        attempts.append(text)
        if len(attempts) == 1:
            raise ConnectionError("first attempt fails")
        return f"flaky {text} after {len(attempts)}"

    tools = [echo, flaky]
    node: ToolNode = (
        ToolNode(tools)
        if kind == "plain"
        else ScheduledToolNode(
            tools,
            declarations={t.name: READ_ONLY for t in tools},
            on_error="raise" if kind == "raise" else "answer",
        )
    )
    graph = StateGraph(State)
    policy = RetryPolicy(initial_interval=0, jitter=False, retry_on=ConnectionError)
    graph.add_node("tools", node, retry_policy=policy)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    message = _message(_call("echo"), _call("flaky"))
    out = await graph.compile().ainvoke({"messages": [HumanMessage("go"), message]})
    return len(attempts), [m["content"] for m in _tool_messages(out["messages"])]


@pytest.mark.anyio
async def test_a_node_retry_policy_retries_under_on_error_raise() -> None:
    expected = await _with_retry_policy("plain")
    assert expected == (2, ["echo x", "flaky x after 2"])
    assert await _with_retry_policy("raise") == expected
    attempts, contents = await _with_retry_policy("answer")  # answered, not retried
    assert attempts == 1
    assert contents[1] == (
        "Error: ConnectionError('first attempt fails')\n Please fix your mistakes."
    )


@tool
def hand_off(text: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Leaves the subgraph for the parent's "other" node, with its ToolMessage."""
    return Command(
        graph=Command.PARENT,
        goto="other",
        update={
            "note": f"handed {text}",
            "messages": [ToolMessage(f"handed {text}", tool_call_id=tool_call_id)],
        },
    )


async def _subgraph_hand_off(kind: str, path: str) -> Any:
    tools = [echo, hand_off, send_parent]
    node: ToolNode = (
        ToolNode(tools)
        if kind == "plain"
        else ScheduledToolNode(tools, declarations={t.name: READ_ONLY for t in tools})
    )
    inner = StateGraph(State)
    inner.add_node("tools", node)
    inner.add_edge(START, "tools")
    inner.add_edge("tools", END)

    def other(state: State) -> dict[str, Any]:
        return {"visited": [f"other:{state.get('note')}"]}

    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_node("other", other)
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    outer.add_edge("other", END)
    app = outer.compile()
    message = _message(_call("echo"), _call("hand_off"), _call("send_parent"))
    value = {"messages": [HumanMessage("go"), message], "note": "n0"}
    if path == "sync":
        out = await anyio.to_thread.run_sync(app.invoke, value)
    else:
        out = await app.ainvoke(value)
    return _observe(out)


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
async def test_command_parent_from_a_subgraph_as_tool_node(path: str) -> None:
    expected = await _subgraph_hand_off("plain", path)
    assert expected["visited"]
    assert await _subgraph_hand_off("scheduled", path) == expected


_MIXABLE = [
    _call("echo"),
    _call("add", {"a": 1, "b": 2}),
    _call("add", {"a": "one"}),
    _call("blocks"),
    _call("as_dict"),
    _call("with_artifact"),
    _call("fail_value"),
    _call("fail_own"),
    _call("set_note"),
    _call("mixed"),
    _call("read_state"),
    _call("use_runtime"),
    _call("own_message"),
    _call("self_handled"),
    _call("nope"),
    _call("empty"),
]
"""Calls that never abort a graph whose node handles every error."""


def _mixes(seed: int, count: int) -> list[Case]:
    import random

    rng = random.Random(seed)
    return [
        Case(
            f"mix{i}",
            rng.choices(_MIXABLE, k=rng.randint(1, 6)),
            {"handle_tool_errors": True},
        )
        for i in range(count)
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize("case", _mixes(seed=15, count=25), ids=lambda c: c.id)
async def test_random_mixes_as_tool_node(case: Case, path: str) -> None:
    """Seeded random messages mixing results, errors, Commands and injection."""
    expected = _comparable(await _run("plain", case, path))
    for kind in ("scheduled", "undeclared", "fragile"):
        assert _comparable(await _run(kind, case, path)) == expected, kind
