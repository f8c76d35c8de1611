"""toolweave's schedule across LangGraph's Send fan-out: create_agent and v2 create_react_agent.

Both send every tool call of the model's message to the tools node as a task of
its own. `ScheduledToolMiddleware` (create_agent) and `ScheduledToolNode` (v2)
admit each through the batch of its AI message: proved here with real graphs,
LangChain's fake chat model, overlap by rendezvous (the Probe), the write alone,
results in call order, on the async path (asyncio: LangGraph's own loop) and on
the sync path (LangGraph's worker threads), and an interrupt set from another
thread during a sync run.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from framework_probe import DECLARATIONS, RENDEZVOUS_TIMEOUT, SCENARIO, Probe
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from test_langgraph import RecordingModel, _answers, _calls, _model, _tools

from toolweave import Access, Concurrency, Interrupt
from toolweave.integrations import READ_ONLY, Declaration
from toolweave.integrations.langgraph import (
    INTERRUPT_KEY,
    ScheduledToolMiddleware,
    ScheduledToolNode,
)
from toolweave.scheduling import ConcurrencyConfig, InterruptToken

EXPECTED = ["value of a", "value of b", "wrote W", "value of c", "value of d"]


def _agent(model: RecordingModel, tools: Sequence[BaseTool], **options: Any) -> Any:
    from langchain.agents import create_agent

    middleware = ScheduledToolMiddleware(DECLARATIONS, **options)
    return create_agent(model, tools=list(tools), middleware=[middleware])


def _v2(model: RecordingModel, node: ScheduledToolNode) -> Any:
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(model, node, version="v2")


def _check(model: RecordingModel, out: dict[str, Any]) -> None:
    answers = _answers(model)
    assert [m.tool_call_id for m in answers] == ["c0", "c1", "c2", "c3", "c4"]
    assert [m.content for m in answers] == EXPECTED
    assert [m.status for m in answers] == ["success"] * 5
    assert out["messages"][-1].content == "done"


@pytest.mark.anyio
async def test_create_agent_overlaps_reads_and_isolates_the_write() -> None:
    probe = Probe()
    model = _model(*SCENARIO)
    out = await _agent(model, _tools(probe)).ainvoke({"messages": [HumanMessage("go")]})
    probe.check()
    _check(model, out)


def test_create_agent_sync_path_overlaps_reads_and_isolates_the_write() -> None:
    probe = Probe()
    model = _model(*SCENARIO)
    agent = _agent(model, _tools(probe, sync=True))
    out = agent.invoke({"messages": [HumanMessage("go")]})
    probe.check()  # the reads of a pair met at a threading barrier
    _check(model, out)


@pytest.mark.anyio
async def test_create_agent_without_the_middleware_runs_the_write_beside_the_reads() -> (
    None
):
    """The baseline: create_agent's own ToolNode starts every call of the message."""
    from langchain.agents import create_agent

    probe = Probe()
    agent = create_agent(_model(*SCENARIO), tools=_tools(probe))
    await agent.ainvoke({"messages": [HumanMessage("go")]})
    at = {e: i for i, e in enumerate(probe.log)}
    assert at["start", "W"] < at["end", "a"]


def test_a_scheduled_tool_node_given_to_create_agent_names_the_middleware() -> None:
    from langchain.agents import create_agent

    node = ScheduledToolNode(_tools(Probe()), declarations=DECLARATIONS)
    with pytest.raises(TypeError, match=r"middleware=\[ScheduledToolMiddleware"):
        create_agent(_model(("read", "a")), tools=node)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_v2_react_agent_schedules_across_its_sends() -> None:
    probe = Probe()
    model = _model(*SCENARIO)
    node = ScheduledToolNode(_tools(probe), declarations=DECLARATIONS)
    out = await _v2(model, node).ainvoke({"messages": [HumanMessage("go")]})
    probe.check()
    _check(model, out)


def test_v2_react_agent_sync_path_schedules_across_its_sends() -> None:
    probe = Probe()
    model = _model(*SCENARIO)
    node = ScheduledToolNode(_tools(probe, sync=True), declarations=DECLARATIONS)
    out = _v2(model, node).invoke({"messages": [HumanMessage("go")]})
    probe.check()
    _check(model, out)


@pytest.mark.anyio
async def test_create_agent_cap_is_reached_and_never_exceeded() -> None:
    import anyio

    inside = 0
    peak = 0
    reached = anyio.Event()
    release = anyio.Event()

    async def read(name: str) -> str:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        if inside == 2:
            reached.set()
        await release.wait()
        inside -= 1
        return name

    tool = StructuredTool.from_function(coroutine=read, name="read", description="r")
    model = _model(*[("read", str(i)) for i in range(5)])
    agent = _agent(
        model,
        [tool],
        scheduler_options={"config": ConcurrencyConfig(max_concurrency=2)},
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.ainvoke, {"messages": [HumanMessage("go")]})
        with anyio.fail_after(RENDEZVOUS_TIMEOUT):  # deadlock guard only
            await reached.wait()
        await anyio.wait_all_tasks_blocked()  # a third call would be inside now
        assert inside == 2
        release.set()
    assert peak == 2
    assert [m.content for m in _answers(model)] == ["0", "1", "2", "3", "4"]


@pytest.mark.anyio
async def test_a_raising_tool_is_answered_and_its_siblings_finish() -> None:
    probe = Probe()

    async def boom(name: str) -> str:
        raise ValueError(f"boom {name}")

    tools = [
        *_tools(probe),
        StructuredTool.from_function(coroutine=boom, name="boom", description="b"),
    ]
    model = _model(("read", "a"), ("boom", "x"), ("read", "b"))
    from langchain.agents import create_agent

    middleware = ScheduledToolMiddleware({**DECLARATIONS, "boom": READ_ONLY})
    agent = create_agent(model, tools=tools, middleware=[middleware])
    await agent.ainvoke({"messages": [HumanMessage("go")]})
    answers = _answers(model)
    assert [m.status for m in answers] == ["success", "error", "success"]
    assert "boom x" in str(answers[1].content)


def _build_agent(model: RecordingModel, tools: list[BaseTool], decl: Any) -> Any:
    from langchain.agents import create_agent

    return create_agent(model, tools=tools, middleware=[ScheduledToolMiddleware(decl)])


def _build_v2(model: RecordingModel, tools: list[BaseTool], decl: Any) -> Any:
    return _v2(model, ScheduledToolNode(tools, declarations=decl))


def _build_node_v1(model: RecordingModel, tools: list[BaseTool], decl: Any) -> Any:
    """A hand-built graph (the node gets the whole message), on its second tools step."""
    from test_langgraph import _graph

    return _graph(model, ScheduledToolNode(tools, declarations=decl))


each_sync_path = pytest.mark.parametrize(
    ("build", "second_step"),
    [
        (_build_agent, False),
        (_build_v2, False),
        (_build_agent, True),
        (_build_v2, True),
        (_build_node_v1, True),
    ],
    ids=["create_agent", "react_v2", "create_agent-2nd", "react_v2-2nd", "node_v1-2nd"],
)


def _sync_interrupt_run(
    build: Callable[..., Any], interrupt: Interrupt, *, second_step: bool = False
) -> tuple[list[ToolMessage], list[str]]:
    """c0 slow (sync, declared `interrupt`), c1 a read beside it, c2 a write after both.

    Another thread (neither LangGraph's nor a loop's) sets the token once c0 and
    c1 are both inside, then lets c0 finish. The write must never start.
    """
    token = InterruptToken()
    inside = threading.Barrier(3)
    finish = threading.Event()
    started: list[str] = []

    def slow(name: str) -> str:
        started.append(name)
        inside.wait(timeout=RENDEZVOUS_TIMEOUT)
        assert finish.wait(timeout=RENDEZVOUS_TIMEOUT)
        return f"slow {name} finished"

    def read(name: str) -> str:
        started.append(name)
        inside.wait(timeout=RENDEZVOUS_TIMEOUT)
        return f"read {name}"

    def write(name: str) -> str:
        started.append(name)
        return f"wrote {name}"

    def interrupter() -> None:
        inside.wait(timeout=RENDEZVOUS_TIMEOUT)
        token.set()
        if interrupt is Interrupt.BLOCK:
            finish.set()  # a BLOCK call runs to its end: let it

    tools: list[BaseTool] = [
        StructuredTool.from_function(f, name=f.__name__, description="t")
        for f in (slow, read, write)
    ]
    reads = Access(reads=("db",))
    declarations = {
        "slow": Declaration(
            concurrency=Concurrency.SAFE, access=reads, interrupt=interrupt
        ),
        "read": Declaration(concurrency=Concurrency.SAFE, access=reads),
        "write": Declaration(access=Access(writes=("db",))),
    }
    calls = _calls(("slow", "s"), ("read", "r"), ("write", "w"))
    # second_step: an earlier tools step ran its batch on a private loop of its
    # own, which has ended when the token is set
    earlier = [_calls(("write", "first"))] if second_step else []
    responses = [*earlier, calls, AIMessage(content="done")]
    model = RecordingModel(responses=responses, seen=[])
    helper = threading.Thread(target=interrupter)
    helper.start()
    try:
        build(model, tools, declarations).invoke(
            {"messages": [HumanMessage("go")]},
            {"configurable": {INTERRUPT_KEY: token}},
        )
    finally:
        finish.set()  # a CANCEL call's abandoned thread ends here
        helper.join(timeout=RENDEZVOUS_TIMEOUT)
    last = model.seen[-1]
    at = max(i for i, m in enumerate(last) if isinstance(m, AIMessage))
    return [m for m in last[at:] if isinstance(m, ToolMessage)], started


@each_sync_path
def test_sync_run_interrupted_from_another_thread_block_call_runs_to_its_end(
    build: Callable[..., Any], second_step: bool
) -> None:
    answers, started = _sync_interrupt_run(
        build, Interrupt.BLOCK, second_step=second_step
    )
    assert [m.tool_call_id for m in answers] == ["c0", "c1", "c2"]
    assert (answers[0].status, answers[0].content) == ("success", "slow s finished")
    assert (answers[1].status, answers[1].content) == ("success", "read r")
    assert answers[2].status == "error"
    assert str(answers[2].content).startswith("Not run: interrupted")
    assert "w" not in started


@each_sync_path
def test_sync_run_interrupted_from_another_thread_cancel_call_is_answered_now(
    build: Callable[..., Any], second_step: bool
) -> None:
    answers, started = _sync_interrupt_run(
        build, Interrupt.CANCEL, second_step=second_step
    )
    assert [m.tool_call_id for m in answers] == ["c0", "c1", "c2"]
    # answered while its thread still ran: what it did is not known
    assert answers[0].status == "error"
    assert str(answers[0].content).startswith("Cancelled: interrupted")
    assert "effects it had are unknown" in str(answers[0].content)
    assert (answers[1].status, answers[1].content) == ("success", "read r")
    assert answers[2].status == "error"
    assert str(answers[2].content).startswith("Not run: interrupted")
    assert "w" not in started


@pytest.mark.anyio
async def test_a_resumed_step_does_not_wait_for_calls_that_finished_before() -> None:
    """interrupt() in the middle call of W, ask, W (all on one key), resumed by a new
    process (a new agent on the same checkpointer): LangGraph sends only the
    interrupted call again, and it must not wait for the write before it."""
    import anyio
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command, interrupt

    from toolweave.integrations._lg_common import RESUMING_KEY

    ran: list[str] = []

    async def write(name: str) -> str:
        ran.append(name)
        return f"wrote {name}"

    async def ask(name: str) -> str:
        answer = interrupt(f"approve {name}?")
        ran.append(f"ask {name}")
        return f"approved: {answer}"

    tools = [
        StructuredTool.from_function(coroutine=f, name=f.__name__, description="t")
        for f in (write, ask)
    ]
    decl = {
        "write": Declaration(access=Access(writes=("db",))),
        "ask": Declaration(access=Access(writes=("db",))),
    }
    saver = InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t"}}

    def agent(model: RecordingModel) -> Any:
        middleware = [ScheduledToolMiddleware(decl)]
        return create_agent(
            model, tools=tools, middleware=middleware, checkpointer=saver
        )

    first = _model(("write", "a"), ("ask", "x"), ("write", "b"))
    paused = await agent(first).ainvoke({"messages": [HumanMessage("go")]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["approve x?"]
    assert ran == ["a", "b"]  # the write after the interrupted call ran after it
    second = RecordingModel(responses=[AIMessage("done")], seen=[])
    with anyio.fail_after(RENDEZVOUS_TIMEOUT):  # a wait for write a would hang here
        out = await agent(second).ainvoke(Command(resume="yes"), config)
    assert ran == ["a", "b", "ask x"]  # only the interrupted call ran again
    answers = [m for m in second.seen[0] if isinstance(m, ToolMessage)]
    assert [m.content for m in answers] == ["wrote a", "approved: yes", "wrote b"]
    assert out["messages"][-1].content == "done"
    assert RESUMING_KEY == "__pregel_resuming"


def test_the_resuming_key_is_langgraphs() -> None:
    """The private LangGraph key the fan-out reads: pinned by name and value."""
    from langgraph._internal._constants import CONFIG_KEY_RESUMING

    from toolweave.integrations._lg_common import RESUMING_KEY

    assert CONFIG_KEY_RESUMING == RESUMING_KEY


@pytest.mark.anyio
async def test_on_error_raise_lets_the_tool_error_out_of_the_graph() -> None:
    """As create_agent does without the middleware (its ToolNode handles only bad args)."""
    from langchain.agents import create_agent

    async def boom(name: str) -> str:
        raise ValueError(f"boom {name}")

    tool = StructuredTool.from_function(coroutine=boom, name="boom", description="b")
    middleware = ScheduledToolMiddleware({"boom": READ_ONLY}, on_error="raise")
    agent = create_agent(_model(("boom", "x")), tools=[tool], middleware=[middleware])
    with pytest.raises(ValueError, match="boom x"):
        await agent.ainvoke({"messages": [HumanMessage("go")]})
    plain = create_agent(_model(("boom", "x")), tools=[tool])
    with pytest.raises(ValueError, match="boom x"):
        await plain.ainvoke({"messages": [HumanMessage("go")]})


def test_the_middleware_refuses_an_unknown_on_error() -> None:
    with pytest.raises(ValueError, match="on_error"):
        ScheduledToolMiddleware({}, on_error="ignore")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_two_runs_sharing_one_middleware_do_not_order_each_other() -> None:
    """Each run's message is its own batch: run A's first write and run B's meet."""
    import anyio
    from langchain.agents import create_agent

    arrived = 0
    met = anyio.Event()

    async def write(name: str) -> str:
        nonlocal arrived
        if name == "first":
            arrived += 1
            if arrived == 2:
                met.set()
            with anyio.fail_after(RENDEZVOUS_TIMEOUT):  # one batch for both: a hang
                await met.wait()
        return f"wrote {name}"

    tool = StructuredTool.from_function(coroutine=write, name="write", description="w")
    middleware = ScheduledToolMiddleware(
        {"write": Declaration(access=Access(writes=("db",)))}
    )
    models = [_model(("write", "first"), ("write", "second")) for _ in range(2)]
    agents = [create_agent(m, tools=[tool], middleware=[middleware]) for m in models]
    async with anyio.create_task_group() as tg:
        for agent in agents:
            tg.start_soon(agent.ainvoke, {"messages": [HumanMessage("go")]})
    for model in models:
        assert [m.content for m in _answers(model)] == ["wrote first", "wrote second"]
