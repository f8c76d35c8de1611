"""The scenarios every framework integration must pass, written once, run on each adapter.

Each runs through the framework's real runner (`framework_adapters`): the call
order of the answers, overlap proven by rendezvous (`framework_probe.Probe`),
the write alone, the baseline without toolweave, an undeclared tool as a
barrier, a raising tool answered while its siblings finish, an interrupt
answering every call, and the concurrency cap reached and never exceeded.
Framework-specific behaviour stays in test_<framework>.py.
"""

from __future__ import annotations

import anyio
import pytest
from framework_adapters import ADAPTERS, Adapter, ToolFn
from framework_probe import DECLARATIONS, SCENARIO, Probe

from toolweave import Access, Concurrency, Interrupt
from toolweave.integrations import READ_ONLY, Declaration
from toolweave.scheduling import InterruptToken

pytestmark = pytest.mark.anyio

each_framework = pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.name)


def _probe_tools(probe: Probe) -> dict[str, ToolFn]:
    return {"read": probe.read, "write": probe.write}


@each_framework
async def test_reads_overlap_write_runs_alone_results_in_call_order(
    adapter: Adapter,
) -> None:
    probe = Probe()
    box = adapter.scheduled(_probe_tools(probe), DECLARATIONS)
    ran = await adapter.run(SCENARIO, box)
    probe.check()
    assert [a.call_id for a in ran.answers] == ["c0", "c1", "c2", "c3", "c4"]
    assert [a.text for a in ran.answers] == [
        "value of a",
        "value of b",
        "wrote W",
        "value of c",
        "value of d",
    ]
    assert [a.failed for a in ran.answers] == [False] * 5
    assert ran.final == "done"


@each_framework
async def test_the_plain_framework_runs_the_write_beside_the_reads(
    adapter: Adapter,
) -> None:
    """The baseline the integrations fix: every call of the response starts at once."""
    probe = Probe()
    await adapter.run(SCENARIO, adapter.plain(_probe_tools(probe)))
    at = {e: i for i, e in enumerate(probe.log)}
    assert at["start", "W"] < at["end", "a"]  # W started while the reads were inside


@each_framework
async def test_an_undeclared_tool_is_a_barrier(adapter: Adapter) -> None:
    probe = Probe()
    box = adapter.scheduled(_probe_tools(probe), {"read": DECLARATIONS["read"]})
    await adapter.run([("read", "a"), ("read", "b"), ("write", "W")], box)
    at = {e: i for i, e in enumerate(probe.log)}
    assert at["start", "W"] > max(at["end", "a"], at["end", "b"])
    assert probe.alone == [True]


async def _boom(name: str) -> str:
    raise ValueError(f"boom {name}")


@each_framework
async def test_a_raising_tool_is_answered_and_its_siblings_finish(
    adapter: Adapter,
) -> None:
    probe = Probe()
    box = adapter.scheduled(
        {**_probe_tools(probe), "boom": _boom},
        {**DECLARATIONS, "boom": READ_ONLY},
        **adapter.error_options,
    )
    ran = await adapter.run([("read", "a"), ("boom", "x"), ("read", "b")], box)
    assert ran.final == "done"
    assert [a.call_id for a in ran.answers] == ["c0", "c1", "c2"]
    assert [a.failed for a in ran.answers] == [False, True, False]
    assert ran.answers[0].text == "value of a" and ran.answers[2].text == "value of b"
    assert "boom x" in ran.answers[1].text
    assert {("end", "a"), ("end", "b")} <= set(probe.log)


@each_framework
async def test_an_interrupt_answers_every_call(adapter: Adapter) -> None:
    token = InterruptToken()
    hang_started = anyio.Event()
    started: list[str] = []

    async def hang(name: str) -> str:
        started.append(name)
        hang_started.set()
        await anyio.sleep_forever()
        raise AssertionError("not reached")

    async def trigger(name: str) -> str:
        del name
        with anyio.fail_after(10):  # deadlock guard only
            await hang_started.wait()
        token.set()
        return "interrupting"

    async def write(name: str) -> str:
        started.append(name)
        return "wrote"

    declarations = {
        "hang": Declaration(concurrency=Concurrency.SAFE, interrupt=Interrupt.CANCEL),
        "trigger": READ_ONLY,
        "write": Declaration(access=Access(writes=("db",))),
    }
    box = adapter.scheduled(
        {"hang": hang, "trigger": trigger, "write": write},
        declarations,
        interrupt=token,
    )
    ran = await adapter.run([("hang", "h"), ("trigger", "t"), ("write", "w")], box)
    assert [a.call_id for a in ran.answers] == ["c0", "c1", "c2"]
    assert [a.failed for a in ran.answers] == [True, False, True]
    assert ran.answers[1].text == "interrupting"
    assert "interrupted" in ran.answers[2].text
    assert started == ["h"]  # the write never started


@each_framework
async def test_max_concurrency_is_reached_and_never_exceeded(adapter: Adapter) -> None:
    inside = 0
    peak = 0
    release = anyio.Event()
    reached = anyio.Event()

    async def read(name: str) -> str:
        nonlocal inside, peak
        inside += 1
        peak = max(peak, inside)
        if inside == 2:
            reached.set()
        await release.wait()
        inside -= 1
        return name

    box = adapter.scheduled({"read": read}, {"read": READ_ONLY}, max_concurrency=2)
    answers: list[str] = []

    async def run() -> None:
        ran = await adapter.run([("read", str(i)) for i in range(5)], box)
        answers.extend(a.text for a in ran.answers)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(10):  # deadlock guard only
            await reached.wait()
        await anyio.wait_all_tasks_blocked()  # a third call would be inside now
        assert inside == 2
        release.set()
    assert peak == 2
    assert answers == ["0", "1", "2", "3", "4"]
