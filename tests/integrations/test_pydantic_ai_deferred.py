"""PydanticAI's deferred tools and its toolset API through `ScheduledToolset`.

Deferred tools (``requires_approval=True``, `ApprovalRequired`, `CallDeferred`):
each scenario runs with the bare toolset and wrapped (declared read-only, and
undeclared = barriers), and compares the `DeferredToolRequests`, every message
and how often each tool body ran, through a resume with `DeferredToolResults`
(approvals, denials, overridden arguments, external results). Then the
schedule: calls approved on resume keep toolweave's schedule (reads meet at a
rendezvous, the write runs alone), and so does a batch through every way of
composing toolsets (prefixed, renamed, filtered, combined, prepared,
approval_required, metadata; ScheduledToolset inside and outside them).

The model is PydanticAI's own `FunctionModel`. asyncio only: PydanticAI's
agent graph calls asyncio itself (it fails on trio with "no running event
loop"; tests/integrations/conftest.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from framework_probe import DECLARATIONS, SCENARIO, Probe
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
)
from pydantic_ai.toolsets import (
    AbstractToolset,
    CombinedToolset,
    FunctionToolset,
    PrefixedToolset,
)
from test_pydantic_ai_fidelity import _dump

from toolweave.integrations import READ_ONLY
from toolweave.integrations.pydantic_ai import ScheduledToolset

pytestmark = pytest.mark.anyio

Calls = Sequence[tuple[str, dict[str, Any]]]


def _model(*turns: Calls) -> FunctionModel:
    """Each turn's calls (ids t<turn>c<index>), then "done"."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < len(turns):
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"t{step}c{i}")
                    for i, (name, args) in enumerate(turns[step])
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


# -- deferred tools: the same as with the bare toolset -------------------------------


def _deferring(ran: Counter[tuple[str, str]]) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain
    async def read(key: str) -> str:
        """Never asks."""
        ran["read", key] += 1
        return f"value of {key}"

    @toolset.tool_plain(requires_approval=True)
    async def write(key: str) -> str:
        """Always asks."""
        ran["write", key] += 1
        return f"wrote {key}"

    @toolset.tool
    def maybe(ctx: RunContext[Any], key: str) -> str:
        """Asks unless approved; sync."""
        if not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"key": key})
        ran["maybe", key] += 1
        return f"maybe {key}"

    @toolset.tool_plain
    async def external(key: str) -> str:
        """Done by the caller."""
        ran["external", key] += 1
        raise CallDeferred(metadata={"key": key})

    return toolset


def _wrap(kind: str, toolset: FunctionToolset[Any]) -> AbstractToolset[Any]:
    if kind == "plain":
        return toolset
    if kind == "read-only":
        return ScheduledToolset(
            toolset, declarations=dict.fromkeys(toolset.tools, READ_ONLY)
        )
    return ScheduledToolset(toolset)  # undeclared: every tool a barrier


MIXED: Calls = [
    ("read", {"key": "a"}),
    ("write", {"key": "a"}),
    ("maybe", {"key": "m"}),
    ("external", {"key": "e"}),
    ("read", {"key": "b"}),
]
AGAIN: Calls = [("write", {"key": "c"}), ("read", {"key": "c"})]

RESULTS: dict[str, Callable[[], DeferredToolResults]] = {
    "approve": lambda: DeferredToolResults(
        approvals={"t0c1": True, "t0c2": ToolApproved()},
        calls={"t0c3": "done outside"},
    ),
    "deny": lambda: DeferredToolResults(
        approvals={"t0c1": ToolDenied("no, said ann"), "t0c2": False},
        calls={"t0c3": ModelRetry("try again later")},
    ),
    "override": lambda: DeferredToolResults(
        approvals={
            "t0c1": ToolApproved(override_args={"key": "z"}),
            "t0c2": ToolDenied(),
        },
        calls={"t0c3": ToolReturn("returned outside", metadata={"by": "ann"})},
    ),
}


def _requests(output: Any) -> Any:
    assert isinstance(output, DeferredToolRequests), output
    return (
        [(c.tool_name, c.tool_call_id, c.args) for c in output.calls],
        [(c.tool_name, c.tool_call_id, c.args) for c in output.approvals],
        output.metadata,
    )


async def _deferred_run(kind: str, results: str) -> dict[str, Any]:
    """Turn 0 defers; resume with `results`; turn 1 asks again; approve it."""
    ran: Counter[tuple[str, str]] = Counter()
    agent = Agent(
        _model(MIXED, AGAIN),
        toolsets=[_wrap(kind, _deferring(ran))],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("go")
    seen: dict[str, Any] = {"first": _requests(first.output), "ran": [dict(ran)]}
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=RESULTS[results](),
    )
    seen["second"] = _requests(second.output)
    seen["ran"].append(dict(ran))
    third = await agent.run(
        message_history=second.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"t1c0": True}),
    )
    seen["ran"].append(dict(ran))
    seen["output"] = third.output
    seen["messages"] = _dump(third.all_messages())
    return seen


@pytest.mark.parametrize("kind", ["read-only", "undeclared"])
@pytest.mark.parametrize("results", list(RESULTS))
async def test_deferred_calls_resume_as_with_the_bare_toolset(
    kind: str, results: str
) -> None:
    expected = await _deferred_run("plain", results)
    assert await _deferred_run(kind, results) == expected
    # what the bare run does, spelled out
    calls, approvals, _ = expected["first"]
    assert [c[1] for c in calls] == ["t0c3"]
    assert sorted(c[1] for c in approvals) == ["t0c1", "t0c2"]
    assert expected["ran"][0] == {
        ("read", "a"): 1,
        ("read", "b"): 1,
        ("external", "e"): 1,
    }
    final = expected["ran"][-1]
    assert final[("read", "a")] == final[("read", "b")] == 1  # never run twice
    assert final[("external", "e")] == 1  # the caller's result stands in for it
    written = {"approve": "a", "deny": None, "override": "z"}[results]
    assert {k for (tool, k) in final if tool == "write"} == (
        {written, "c"} if written else {"c"}
    )
    assert final.get(("maybe", "m"), 0) == int(results == "approve")
    assert expected["output"] == "done"


async def test_the_model_sees_each_decision_in_place() -> None:
    ran: Counter[tuple[str, str]] = Counter()
    agent = Agent(
        _model(MIXED),
        toolsets=[_wrap("read-only", _deferring(ran))],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("go")
    second = await agent.run(
        message_history=first.all_messages(), deferred_tool_results=RESULTS["deny"]()
    )
    [request] = [
        m
        for m in second.all_messages()
        if isinstance(m, ModelRequest)
        and any(getattr(p, "tool_call_id", "") == "t0c1" for p in m.parts)
    ]
    parts = {getattr(p, "tool_call_id", None): p for p in request.parts}
    assert isinstance(parts["t0c1"], ToolReturnPart)
    assert parts["t0c1"].content == "no, said ann"
    assert isinstance(parts["t0c3"], ToolReturnPart)
    assert parts["t0c3"].outcome == "retried"  # the caller's ModelRetry
    returned = Counter(
        p.tool_call_id
        for m in second.all_messages()
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    )
    assert returned == dict.fromkeys([f"t0c{i}" for i in range(5)], 1)
    assert ran == {("read", "a"): 1, ("read", "b"): 1, ("external", "e"): 1}


# -- the schedule holds for calls approved on resume ---------------------------------


def _probe_toolset(probe: Probe, **tool: Any) -> FunctionToolset[Any]:
    toolset: FunctionToolset[Any] = FunctionToolset()

    @toolset.tool_plain(**tool)
    async def read(name: str) -> str:
        """Read."""
        return await probe.read(name)

    @toolset.tool_plain(**tool)
    async def write(name: str) -> str:
        """Write."""
        return await probe.write(name)

    return toolset


def _scenario(prefix: str = "") -> Calls:
    return [(f"{prefix}{tool}", {"name": arg}) for tool, arg in SCENARIO]


async def _approve_all(agent: Agent[Any, Any]) -> Any:
    first = await agent.run("go")
    assert isinstance(first.output, DeferredToolRequests)
    ids = [c.tool_call_id for c in first.output.approvals]
    assert ids == [f"t0c{i}" for i in range(5)]
    return await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals=dict.fromkeys(ids, True)),
    )


async def test_approved_calls_keep_the_schedule_on_resume() -> None:
    probe = Probe()
    toolset = ScheduledToolset(
        _probe_toolset(probe, requires_approval=True), declarations=DECLARATIONS
    )
    agent = Agent(
        _model(_scenario()), toolsets=[toolset], output_type=[str, DeferredToolRequests]
    )
    assert (await _approve_all(agent)).output == "done"
    probe.check()


async def test_without_toolweave_the_approved_write_overlaps_the_reads() -> None:
    """The baseline: PydanticAI runs the approved write beside the reads."""
    probe = Probe()
    agent = Agent(
        _model(_scenario()),
        toolsets=[_probe_toolset(probe, requires_approval=True)],
        output_type=[str, DeferredToolRequests],
    )
    await _approve_all(agent)
    at = {event: i for i, event in enumerate(probe.log)}
    assert at["start", "W"] < max(at["end", "a"], at["end", "b"])
    with pytest.raises(AssertionError):
        probe.check()


async def test_approval_required_outside_the_wrapper_keeps_the_schedule() -> None:
    probe = Probe()
    toolset = ScheduledToolset(
        _probe_toolset(probe), declarations=DECLARATIONS
    ).approval_required()
    agent = Agent(
        _model(_scenario()), toolsets=[toolset], output_type=[str, DeferredToolRequests]
    )
    assert (await _approve_all(agent)).output == "done"
    probe.check()


async def test_approval_required_inside_the_wrapper_keeps_the_schedule() -> None:
    probe = Probe()
    inner = _probe_toolset(probe).approval_required()
    toolset = ScheduledToolset(inner, declarations=DECLARATIONS)
    agent = Agent(
        _model(_scenario()), toolsets=[toolset], output_type=[str, DeferredToolRequests]
    )
    assert (await _approve_all(agent)).output == "done"
    probe.check()


# -- composing toolsets ----------------------------------------------------------------


def _only_probe_tools(ctx: RunContext[Any], tool_def: ToolDefinition) -> bool:
    return tool_def.name != "hidden"


def _hide_nothing(
    ctx: RunContext[Any], tool_defs: list[ToolDefinition]
) -> list[ToolDefinition]:
    return [replace_description(d) for d in tool_defs]


def replace_description(tool_def: ToolDefinition) -> ToolDefinition:
    from dataclasses import replace

    return replace(tool_def, description=f"prepared: {tool_def.description}")


def _prefixed(names: dict[str, Any]) -> dict[str, Any]:
    return {f"db_{name}": d for name, d in names.items()}


def _with_hidden(probe: Probe) -> FunctionToolset[Any]:
    toolset = _probe_toolset(probe)

    @toolset.tool_plain
    def hidden(name: str) -> str:
        """Filtered out."""
        raise AssertionError("a filtered tool ran")

    return toolset


def _split(probe: Probe) -> CombinedToolset[Any]:
    whole = _probe_toolset(probe)
    reads = whole.filtered(lambda ctx, d: d.name == "read")
    writes = whole.filtered(lambda ctx, d: d.name == "write")
    return CombinedToolset([reads, writes])


COMPOSITIONS: dict[str, tuple[str, Callable[[Probe], AbstractToolset[Any]]]] = {
    # ScheduledToolset around the composed toolset: declared by the names it reports
    "around PrefixedToolset": (
        "db_",
        lambda p: ScheduledToolset(
            PrefixedToolset(_probe_toolset(p), "db"),
            declarations=_prefixed(DECLARATIONS),
        ),
    ),
    "around .renamed": (
        "db_",
        lambda p: ScheduledToolset(
            _probe_toolset(p).renamed({"db_read": "read", "db_write": "write"}),
            declarations=_prefixed(DECLARATIONS),
        ),
    ),
    "around .filtered": (
        "",
        lambda p: ScheduledToolset(
            _with_hidden(p).filtered(_only_probe_tools), declarations=DECLARATIONS
        ),
    ),
    "around CombinedToolset": (
        "",
        lambda p: ScheduledToolset(_split(p), declarations=DECLARATIONS),
    ),
    "around .prepared": (
        "",
        lambda p: ScheduledToolset(
            _probe_toolset(p).prepared(_hide_nothing), declarations=DECLARATIONS
        ),
    ),
    "around .with_metadata": (
        "",
        lambda p: ScheduledToolset(
            _probe_toolset(p).with_metadata(team="db"), declarations=DECLARATIONS
        ),
    ),
    # the composed helpers around ScheduledToolset: declared by the inner names
    ".prefixed outside": (
        "db_",
        lambda p: ScheduledToolset(
            _probe_toolset(p), declarations=DECLARATIONS
        ).prefixed("db"),
    ),
    ".renamed outside": (
        "db_",
        lambda p: ScheduledToolset(
            _probe_toolset(p), declarations=DECLARATIONS
        ).renamed({"db_read": "read", "db_write": "write"}),
    ),
    ".filtered outside": (
        "",
        lambda p: ScheduledToolset(_with_hidden(p), declarations=DECLARATIONS).filtered(
            _only_probe_tools
        ),
    ),
    ".prepared outside": (
        "",
        lambda p: ScheduledToolset(
            _probe_toolset(p), declarations=DECLARATIONS
        ).prepared(_hide_nothing),
    ),
    "CombinedToolset of ScheduledToolsets": (
        "",
        lambda p: CombinedToolset(
            [
                ScheduledToolset(
                    _probe_toolset(p).filtered(lambda ctx, d: d.name == "read"),
                    declarations=DECLARATIONS,
                ),
                ScheduledToolset(
                    _probe_toolset(p).filtered(lambda ctx, d: d.name == "write"),
                    declarations=DECLARATIONS,
                ),
            ]
        ),
    ),
}


@pytest.mark.parametrize("name", list(COMPOSITIONS))
async def test_a_composed_toolset_keeps_the_schedule(name: str) -> None:
    prefix, build = COMPOSITIONS[name]
    probe = Probe()
    agent = Agent(_model(_scenario(prefix)), toolsets=[build(probe)])
    result = await agent.run("go")
    assert result.output == "done"
    probe.check()
    [request] = [
        m
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        and any(isinstance(p, ToolReturnPart) for p in m.parts)
    ]
    returns = [p for p in request.parts if isinstance(p, ToolReturnPart)]
    assert [p.tool_call_id for p in returns] == [f"t0c{i}" for i in range(5)]
    assert [p.tool_name for p in returns] == [t for t, _ in _scenario(prefix)]


@pytest.mark.parametrize("outside", [False, True])
async def test_a_filtered_out_tool_stays_unknown_as_without_the_wrapper(
    outside: bool,
) -> None:
    def run(toolset: AbstractToolset[Any]) -> Agent[Any, Any]:
        return Agent(_model([("hidden", {"name": "x"})]), toolsets=[toolset])

    bare = await run(_with_hidden(Probe()).filtered(_only_probe_tools)).run("go")
    if outside:
        wrapped = ScheduledToolset(_with_hidden(Probe())).filtered(_only_probe_tools)
    else:
        wrapped = ScheduledToolset(_with_hidden(Probe()).filtered(_only_probe_tools))
    got = await run(wrapped).run("go")
    assert _dump(got.all_messages()) == _dump(bare.all_messages())
    [answer] = [
        p for m in bare.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    assert answer.outcome == "retried"
    assert "Unknown tool name: 'hidden'" in str(answer.content)


async def _clash(wrap: bool) -> str:
    inner: AbstractToolset[Any] = PrefixedToolset(_probe_toolset(Probe()), "db")
    if wrap:
        inner = ScheduledToolset(inner)
    other = _probe_toolset(Probe()).prefixed("db")
    agent = Agent(_model(_scenario("db_")), toolsets=[inner, other])
    with pytest.raises(UserError) as caught:
        await agent.run("go")
    return str(caught.value)


async def test_a_name_clash_names_the_prefix_as_without_the_wrapper() -> None:
    wrapped = await _clash(True)
    assert wrapped == await _clash(False)
    assert "prefix" in wrapped
