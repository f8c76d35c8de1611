"""A context change that changes the toolset is serial-equivalent (issue 29, item 4).

Each case of `toolset_world.CASES` runs serially (concurrency off) and with
concurrency on, through the scheduler's public API (`Dispatcher.dispatch`
with a `ToolRunner`) and through `tw.Agent` (its stream seam), on both
backends: the transcripts are equal, so every call ran as the tool serial
execution would have looked up, and what overlapped is shown wave by wave by
rendezvous (`drive`). It used to differ: a call of a tool registered by an
earlier call's modifier answered "Unknown tool", and calls of a name
re-registered as a SEQUENTIAL writer overlapped under the old reader's plan.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from toolset_world import CASES, World, batch_of, call, drive, writers_alone

import toolweave as tw
from toolweave.execution import ToolRunner
from toolweave.models import ScriptedModel
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools import SessionState

pytestmark = pytest.mark.anyio

POLICIES = ["all_or_nothing", "partition", "rwlock", "conflict"]

Transcript = list[tuple[str, str, bool]]


def _transcript(results: list[tw.ToolResult]) -> Transcript:
    return [(r.call_id, r.text, r.is_error) for r in results]


async def _dispatch(
    case: str, config: ConcurrencyConfig, tmp: Path, *, hold: bool
) -> tuple[Transcript, list[set[str]]]:
    world = World(hold=hold)
    runner = ToolRunner(world.registry, state=SessionState(workspace=tmp))
    dispatcher = Dispatcher(config)
    results, waves = await drive(
        world, lambda: dispatcher.dispatch(batch_of(case), world.registry, runner)
    )
    return _transcript(results), waves


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", sorted(CASES))
async def test_dispatch_answers_as_serial_execution(
    tmp_path: Path, case: str, policy: str
) -> None:
    serial, _ = await _dispatch(
        case, ConcurrencyConfig(enabled=False), tmp_path, hold=False
    )
    config = ConcurrencyConfig(policy=policy, max_concurrency=8)  # type: ignore[arg-type]
    parallel, waves = await _dispatch(case, config, tmp_path, hold=True)
    assert parallel == serial
    assert writers_alone(waves), waves
    if policy == "conflict":
        assert waves == CASES[case][1]


async def test_the_cases_see_the_change_serially(tmp_path: Path) -> None:
    """The table is no tautology: serially each change is seen by what follows it."""
    registered, _ = await _dispatch(
        "register-then-call", ConcurrencyConfig(enabled=False), tmp_path, hold=False
    )
    assert registered[1] == ("c1", "x:x1", False)
    removed, _ = await _dispatch(
        "unregister-then-call", ConcurrencyConfig(enabled=False), tmp_path, hold=False
    )
    assert removed[1][1:] == ("x:x1", False)
    assert removed[3][2] and "Unknown tool" in removed[3][1]
    rewritten, _ = await _dispatch(
        "reader-to-writer", ConcurrencyConfig(enabled=False), tmp_path, hold=False
    )
    assert [t for _, t, _ in rewritten] == [
        "w@reader:r0",
        "admin w_writer",
        "w@writer:w1",
        "w@writer:w2",
        "w@writer:w3",
    ]


async def test_a_batch_that_changes_nothing_keeps_its_overlap(tmp_path: Path) -> None:
    """No modifier, no change: the readers around a barrier overlap as before."""
    batch = [call(0, "w", "r1"), call(1, "w", "r2"), call(2, "admin", "a", op="raise")]
    batch += [call(3, "w", "r3"), call(4, "w", "r4")]
    world = World(hold=True)
    runner = ToolRunner(world.registry, state=SessionState(workspace=tmp_path))
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=8))
    _, waves = await drive(
        world, lambda: dispatcher.dispatch(batch, world.registry, runner)
    )
    assert waves == [{"r1", "r2"}, {"a"}, {"r3", "r4"}]


async def test_a_narrow_declaration_that_changes_the_toolset_is_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A SAFE call that re-registers a name broke its declaration: a warning says so.

    The call after it overlapped it (it claimed to touch nothing of `w`'s), so
    it ran as the reader it was classified by; the call not yet started when
    the change came is classified again and runs as the writer.
    """
    world = World(hold=True)
    modifier = world.modifier("w_writer")

    async def sneaky(tag: str) -> tw.execution.ToolOutput:
        """Claims to read only; changes the toolset."""
        await world._body(tag)
        return tw.execution.ToolOutput("sneaky", context_modifier=modifier)

    world.registry.register(
        tw.tool(
            name="sneaky",
            concurrency=tw.Concurrency.SAFE,
            access=lambda a: tw.Access(reads=["s:"]),
        )(sneaky)
    )
    batch = [
        call(0, "sneaky", "s"),
        call(1, "w", "r1"),
        call(2, "admin", "a", op="raise"),
    ]
    batch.append(call(3, "w", "w1"))
    runner = ToolRunner(world.registry, state=SessionState(workspace=tmp_path))
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=8))
    with caplog.at_level(logging.WARNING, logger="toolweave.scheduling"):
        results, waves = await drive(
            world, lambda: dispatcher.dispatch(batch, world.registry, runner)
        )
    assert waves[0] == {"s", "r1"}
    assert [r.text for r in results] == [
        "sneaky",
        "w@reader:r1",
        "admin raise",
        "w@writer:w1",
    ]
    warned = [r.message for r in caplog.records if "changed the toolset" in r.message]
    assert len(warned) == 1 and "(c1)" in warned[0]


# -- through tw.Agent ---------------------------------------------------------------


def _agent_model(case: str) -> ScriptedModel:
    return ScriptedModel(
        [
            tw.ModelResponse(batch_of(case), stop_reason=tw.StopReason.TOOL_USE),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )


async def _agent(
    case: str, concurrency: ConcurrencyConfig, *, hold: bool
) -> tuple[Transcript, list[set[str]]]:
    world = World(hold=hold)
    agent = tw.Agent(
        _agent_model(case),
        world.registry,
        config=tw.AgentConfig(concurrency=concurrency),
    )
    result, waves = await drive(world, lambda: agent.run("go"))
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    results = [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]
    return _transcript(results), waves


@pytest.mark.parametrize("overlap", [True, False], ids=["streamed", "dispatched"])
@pytest.mark.parametrize("case", sorted(CASES))
async def test_agent_answers_as_serial_execution(case: str, overlap: bool) -> None:
    serial, _ = await _agent(case, ConcurrencyConfig(enabled=False), hold=False)
    config = ConcurrencyConfig(max_concurrency=8, streaming_overlap=overlap)
    parallel, waves = await _agent(case, config, hold=True)
    assert len(serial) == len(batch_of(case))
    assert parallel == serial
    assert waves == CASES[case][1]


async def test_a_call_that_overlapped_a_change_of_another_name_is_not_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A call of a known tool declaring Access() overlaps the barrier (issue 13).

    The barrier registers another name: the overlapping call's name resolves
    as before, so nothing is warned about; the call after the change runs.
    """
    world = World(hold=True)

    async def free(tag: str) -> str:
        """Touches nothing shared."""
        await world._body(tag)
        return f"free:{tag}"

    world.registry.register(
        tw.tool(
            name="free", concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access()
        )(free)
    )
    batch = [
        call(0, "admin", "a", op="register_x"),
        call(1, "free", "f"),
        call(2, "x", "x1"),
    ]
    runner = ToolRunner(world.registry, state=SessionState(workspace=tmp_path))
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=8))
    with caplog.at_level(logging.WARNING, logger="toolweave.scheduling"):
        results, waves = await drive(
            world, lambda: dispatcher.dispatch(batch, world.registry, runner)
        )
    assert waves == [{"a", "f"}, {"x1"}]
    assert [r.text for r in results] == ["admin register_x", "free:f", "x:x1"]
    assert not [r for r in caplog.records if "changed the toolset" in r.message]
