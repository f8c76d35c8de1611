"""Which calls start before their response is final, and what a discarded stream reports.

`starts_early` is the one rule: SAFE (the gate's parallel-ok), no declared write,
and a warrant someone answers for. The streaming batch plans by it (the first call
it refuses holds back every later one until the response is final), and a
discarded stream's `answered()` says what each started call did.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from sched_probe import Probe, runner_for

import toolweave as tw
from toolweave.scheduling import CallPlan, Dispatcher, classify, starts_early
from toolweave.tools import Warrant, WrappedTool

pytestmark = pytest.mark.anyio

SAFE, SEQUENTIAL = tw.Concurrency.SAFE, tw.Concurrency.SEQUENTIAL


class _NoArgs(BaseModel):
    pass


class _Declared(tw.Tool):
    """A tool that only declares; `broken` makes its warrant raise."""

    def __init__(self, *, broken: bool = False, **declared: Any) -> None:
        super().__init__(name="t", description="d", input_model=_NoArgs, **declared)
        self._broken = broken

    @property
    def warrant(self) -> Warrant:
        if self._broken:
            raise RuntimeError("no idea who vouches")
        return super().warrant


def _plan(tool: tw.Tool, call: tw.ToolCall | None = None) -> CallPlan:
    return classify(call or tw.ToolCall("c", tool.name, {}), tw.ToolRegistry([tool]))


ROWS = [
    # (declaration, audit_enforced, starts early)
    ({"concurrency": SAFE, "access": tw.Access()}, False, True),  # yours
    ({"concurrency": SAFE}, False, True),  # yours, reads everything
    ({"concurrency": SAFE, "warrant": Warrant.ENFORCED}, False, True),
    ({"concurrency": SAFE, "warrant": Warrant.AUDITED}, False, False),
    ({"concurrency": SAFE, "warrant": Warrant.AUDITED}, True, True),
    ({"concurrency": SAFE, "warrant": Warrant.UNVOUCHED}, False, False),
    ({"concurrency": SAFE, "warrant": Warrant.UNVOUCHED}, True, False),
    # a SAFE claim that writes is no read-only claim, whoever makes it
    ({"concurrency": SAFE, "access": tw.Access(writes=["k:"])}, False, False),
    (
        {
            "concurrency": SAFE,
            "warrant": Warrant.ENFORCED,
            "access": tw.Access.barrier(),
        },
        True,
        False,
    ),
    ({"concurrency": SEQUENTIAL}, False, False),
    ({"concurrency": SEQUENTIAL, "access": tw.Access()}, True, False),
    ({"concurrency": SAFE, "hidden": True}, False, False),  # the gate says no
    ({"concurrency": SAFE, "broken": True}, False, False),  # unsure: fail closed
]


@pytest.mark.parametrize(("declared", "audit_enforced", "early"), ROWS)
def test_starts_early_table(
    declared: dict[str, Any], audit_enforced: bool, early: bool
) -> None:
    plan = _plan(_Declared(**declared))
    assert starts_early(plan, audit_enforced=audit_enforced) is early


def test_a_call_that_runs_nothing_may_always_start() -> None:
    tool = _Declared(concurrency=SEQUENTIAL, warrant=Warrant.UNVOUCHED)
    unknown = _plan(tool, tw.ToolCall("c", "nope", {}))
    not_json = _plan(tool, tw.ToolCall("c", "t", {}, raw_arguments='{"a": '))
    for plan in (unknown, not_json):
        assert plan.runs_nothing and starts_early(plan)


def _stream_tools(probe: Probe) -> tw.ToolRegistry:
    return tw.ToolRegistry(
        [
            probe.tool("mine", access=lambda a: tw.Access()),
            _hinted(probe.tool("hinted", access=lambda a: tw.Access())),
        ]
    )


class _Hinted(WrappedTool):
    """The same tool, its claim relayed from someone else (an MCP server's hint)."""


def _hinted(tool: tw.Tool) -> tw.Tool:
    return _Hinted(tool, warrant=Warrant.UNVOUCHED)


async def test_an_unvouched_call_holds_itself_and_the_rest_until_final() -> None:
    probe = Probe()
    registry = _stream_tools(probe)
    specs = [("mine", "a"), ("hinted", "b"), ("mine", "c")]
    batch = [
        tw.ToolCall(f"c{i}", name, {"key": k}) for i, (name, k) in enumerate(specs)
    ]
    async with Dispatcher().open_stream(registry, runner_for(registry)) as stream:
        for call in batch:
            stream.submit(call)
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a"]  # b is only a hint: it and c wait
        stream.finish()
        await anyio.wait_all_tasks_blocked()
        assert sorted(probe.started()) == ["a", "b", "c"]  # final: all overlap
        probe.release_all()
        results = await stream.harvest()
    assert [r.text for r in results] == ["mine:a", "hinted:b", "mine:c"]


async def test_a_discarded_stream_says_what_each_started_call_did() -> None:
    probe = Probe()
    registry = tw.ToolRegistry(
        [
            probe.tool("quick", access=lambda a: tw.Access(), hold=False),
            probe.tool(
                "cut", access=lambda a: tw.Access(), interrupt=tw.Interrupt.CANCEL
            ),
            probe.tool("block", access=lambda a: tw.Access()),  # BLOCK: runs on
            probe.tool("later", concurrency=SEQUENTIAL),  # never starts
        ]
    )
    specs = [("quick", "a"), ("cut", "b"), ("block", "c"), ("later", "d")]
    batch = [
        tw.ToolCall(f"c{i}", name, {"key": k}) for i, (name, k) in enumerate(specs)
    ]
    started: list[str] = []
    completed: dict[str, tw.ToolResult] = {}
    stream_of = Dispatcher().open_stream(
        registry,
        runner_for(registry),
        on_started=lambda c: started.append(c.id),
        on_completed=lambda c, r: completed.__setitem__(c.id, r),
    )
    async with stream_of as stream:
        assert not stream.started
        for call in batch:
            stream.submit(call)
        await anyio.wait_all_tasks_blocked()
        assert stream.started and sorted(probe.started()) == ["a", "b", "c"]
        stream.discard()  # a retry: b is cut, c runs to its end, d never starts
        await anyio.wait_all_tasks_blocked()
        probe.release("c")
    answered = {s.call.id: s for s in stream.answered()}
    assert set(answered) == set(started) == set(completed) == {"c0", "c1", "c2"}
    assert {k: s.result for k, s in answered.items()} == completed
    assert all(s.ran for s in answered.values())
    assert answered["c0"].result.text == "quick:a"
    assert answered["c2"].result.text == "block:c"  # it ran: its result, not "not run"
    cut = answered["c1"].result
    assert cut.synthetic and "effects it had are unknown" in cut.text
    assert "discarded" in cut.text
    assert "start d" not in probe.log


async def test_a_discarded_call_admitted_but_not_running_is_answered_as_not_run() -> (
    None
):
    probe = Probe()
    registry = tw.ToolRegistry([probe.tool("one", access=lambda a: tw.Access())])
    config = tw.ConcurrencyConfig(max_concurrency=1)
    batch = [tw.ToolCall(f"c{i}", "one", {"key": k}) for i, k in enumerate("ab")]
    async with Dispatcher(config).open_stream(registry, runner_for(registry)) as stream:
        for call in batch:
            stream.submit(call)
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a"]  # b waits for the one slot
        stream.discard()
        probe.release("a")
    answered = {s.call.id: s for s in stream.answered()}
    assert answered["c0"].ran and answered["c0"].result.text == "one:a"
    assert "c1" not in answered  # never admitted: nothing happened, nothing to tell


@given(
    kinds=st.lists(
        st.sampled_from(["mine", "enforced", "hinted", "writes", "sequential"]),
        min_size=1,
        max_size=6,
    )
)
async def test_while_streaming_exactly_the_vouched_prefix_starts(
    anyio_backend: Any, kinds: list[str]
) -> None:
    probe = Probe()
    tools = {
        "mine": probe.tool("mine", access=lambda a: tw.Access(reads=["r:"])),
        "enforced": WrappedTool(
            probe.tool("enforced", access=lambda a: tw.Access(reads=["r:"])),
            warrant=Warrant.ENFORCED,
        ),
        "hinted": _hinted(
            probe.tool("hinted", access=lambda a: tw.Access(reads=["r:"]))
        ),
        "writes": probe.tool(
            "writes", access=lambda a: tw.Access(writes=[f"w:{a['key']}"])
        ),
        "sequential": probe.tool("sequential", concurrency=SEQUENTIAL),
    }
    registry = tw.ToolRegistry(tools.values())
    batch = [tw.ToolCall(f"c{i}", k, {"key": str(i)}) for i, k in enumerate(kinds)]
    prefix = 0
    while prefix < len(kinds) and kinds[prefix] in ("mine", "enforced"):
        prefix += 1
    async with Dispatcher().open_stream(registry, runner_for(registry)) as stream:
        for call in batch:
            stream.submit(call)
        await anyio.wait_all_tasks_blocked()
        assert sorted(probe.started()) == [str(i) for i in range(prefix)]
        stream.finish()
        probe.release(*(str(i) for i in range(len(kinds))))  # now and when it starts
        results = await stream.harvest()
    assert [r.text for r in results] == [f"{k}:{i}" for i, k in enumerate(kinds)]
