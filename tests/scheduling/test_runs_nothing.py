"""Calls that provably run no code (issue 13, item 6) are answered at once and are no barrier."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from sched_probe import Probe, dispatch_soon, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher

pytestmark = pytest.mark.anyio

POLICIES = ["all_or_nothing", "partition", "rwlock", "conflict"]


def _setup() -> tuple[Probe, tw.ToolRegistry]:
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool("read"),
            probe.tool("write", concurrency=tw.Concurrency.SEQUENTIAL),
        ]
    )
    return probe, reg


# (name, input, raw_arguments): every way a call can provably run nothing.
NO_CODE = [
    ("reed", {"key": "x"}, None),  # hallucinated name
    ("read", {"key": 5, "extra": object()}, None),  # fails the schema
    ("read", {}, None),  # a required field is missing
    ("write", {}, "{not json"),  # arguments that are not JSON
]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("bad", NO_CODE)
async def test_a_call_that_runs_nothing_does_not_split_safe_calls(
    policy: str, bad: tuple[str, dict[str, Any], str | None]
) -> None:
    probe, reg = _setup()
    name, args, raw = bad
    batch = [
        tw.ToolCall("c0", "read", {"key": "a"}),
        tw.ToolCall("c1", name, args, raw_arguments=raw),
        tw.ToolCall("c2", "read", {"key": "b"}),
    ]
    completed: list[str] = []
    dispatcher = Dispatcher(ConcurrencyConfig(policy=policy))  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            dispatcher,
            batch,
            reg,
            runner_for(reg),
            on_completed=lambda c, r: completed.append(c.id),
        )
        await anyio.wait_all_tasks_blocked()
        # both reads overlap (the bad call between them is no barrier), and the
        # bad call is already answered while they run.
        assert sorted(probe.started()) == ["a", "b"]
        assert completed == ["c1"]
        probe.release_all()
    assert [r.call_id for r in out] == ["c0", "c1", "c2"]
    assert [r.is_error for r in out] == [False, True, False]
    assert dispatcher.statistics().slots_in_use == 0


@pytest.mark.parametrize("policy", POLICIES)
async def test_a_call_that_runs_nothing_waits_for_a_barrier_and_is_none_itself(
    policy: str,
) -> None:
    """Issue 29 item 4: the barrier's context change may register 'ghost'.

    Serially 'ghost' is looked up after the barrier, so it waits for it (it
    used to be answered while the barrier ran); it is still no barrier: the
    read after it does not wait for it.
    """
    probe, reg = _setup()
    batch = [
        tw.ToolCall("c0", "write", {"key": "w"}),
        tw.ToolCall("c1", "ghost", {}),
        tw.ToolCall("c2", "read", {"key": "r"}),
    ]
    completed: list[str] = []
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            Dispatcher(ConcurrencyConfig(policy=policy)),  # type: ignore[arg-type]
            batch,
            reg,
            runner_for(reg),
            on_completed=lambda c, r: completed.append(c.id),
        )
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["w"]  # the barrier still orders the real read
        assert completed == []  # nor is the ghost looked up before it
        probe.release("w")
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["w", "r"]
        assert completed == ["c0", "c1"]  # answered while the read still runs
        probe.release("r")
    assert [r.call_id for r in out] == ["c0", "c1", "c2"]
    assert "unknown tool" in out[1].text


async def test_a_validator_that_raises_is_still_a_barrier() -> None:
    probe, reg = _setup()
    read = reg.get("read")
    assert read is not None
    original = read.parse

    def flaky(raw: Any) -> dict[str, Any]:
        if raw.get("key") == "boom":
            raise RuntimeError("validator bug")
        return original(raw)

    read.parse = flaky  # type: ignore[method-assign]
    batch = [
        tw.ToolCall("c0", "read", {"key": "a"}),
        tw.ToolCall("c1", "read", {"key": "boom"}),
        tw.ToolCall("c2", "read", {"key": "b"}),
    ]
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(tg, Dispatcher(), batch, reg, runner_for(reg))
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a"]  # fail closed: the raising call is a barrier
        probe.release("a")
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a", "b"]
        probe.release("b")
    assert [r.is_error for r in out] == [False, True, False]
