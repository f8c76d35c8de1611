"""Suspend for a person's decision and resume with it, through `tw.Agent` (issue 29 item 1).

``AgentConfig(on_ask="suspend")``: a call that must ask with no ask handler
ends the run SUSPENDED; `Agent.resume` continues the same batch. Side effects
are counted in a file on disk: nothing runs twice, nothing approved is
skipped, a denied call never ran, and a call after a pending one that
depends on it never ran before it. Both backends.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from loop_support import assert_provider_valid, call, say, use

from toolweave import CompletionReason
from toolweave._exceptions import UsageError
from toolweave.events import (
    Event,
    PermissionAnswered,
    RunSuspended,
    ToolResultReady,
    ToolRunning,
)
from toolweave.execution import PermissionRules
from toolweave.loop import Agent, AgentConfig
from toolweave.models import ScriptedModel
from toolweave.tools import Access, Concurrency, Tool, tool

pytestmark = pytest.mark.anyio


def _tools(log: Path) -> list[Tool]:
    """``free``: needs nothing, touches nothing shared; ``guarded``: asks (a rule),
    SEQUENTIAL (a barrier); ``after``: SEQUENTIAL, so it waits for every earlier call."""

    def mark(tag: str) -> str:
        with log.open("a") as f:
            f.write(tag + "\n")
        return f"did {tag}"

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def free(tag: str) -> str:
        """Runs without asking."""
        return mark(tag)

    @tool
    async def guarded(tag: str) -> str:
        """Needs approval."""
        return mark(tag)

    @tool
    async def after(tag: str) -> str:
        """Runs after everything before it."""
        return mark(tag)

    return [free, guarded, after]


def _ran(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _agent(log: Path, model: ScriptedModel, **config: object) -> Agent:
    settings = AgentConfig(
        permissions=PermissionRules(ask=["guarded"]),
        on_ask="suspend",
        **config,  # type: ignore[arg-type]
    )
    return Agent(model, _tools(log), config=settings)


def _batch() -> list[object]:
    return [
        use(
            call("a", "free", tag="a"),
            call("b", "guarded", tag="b"),
            call("c", "free", tag="c"),
            call("d", "after", tag="d"),
        ),
        say("done"),
    ]


async def _run(agent: Agent, prompt: str) -> tuple[object, list[Event]]:
    events: list[Event] = []
    with anyio.fail_after(30):
        async with agent.open_run(prompt) as run:
            events = [e async for e in run.events()]
    return run.result, events


async def test_a_call_that_must_ask_suspends_the_run_and_what_depends_on_it_waits(
    tmp_path: Path,
) -> None:
    log = tmp_path / "ran.log"
    agent = _agent(log, ScriptedModel(_batch()))  # type: ignore[arg-type]
    result, events = await _run(agent, "go")
    assert result is not None
    assert result.completion_reason is CompletionReason.SUSPENDED  # type: ignore[attr-defined]
    # a and c touch nothing shared: they ran; d waits for b (a barrier): it never started
    assert sorted(_ran(log)) == ["a", "c"]
    pending = result.pending  # type: ignore[attr-defined]
    assert [(p.key, p.call_id, p.tool, dict(p.input)) for p in pending] == [
        ("1.1", "b", "guarded", {"tag": "b"})
    ]
    assert pending[0].source == "rule" and pending[0].reason
    suspension = result.suspension  # type: ignore[attr-defined]
    assert sorted(suspension.done) == ["1.0", "1.2"]
    assert [c.ref for c in suspension.waiting] == ["1.1", "1.3"]
    # the transcript ends with the calls; nothing answers them yet
    assert result.messages[-1].role == "assistant"  # type: ignore[attr-defined]
    readied = [e.call.ref for e in events if isinstance(e, ToolResultReady)]
    assert sorted(readied) == ["1.0", "1.2"]
    running = {e.key for e in events if isinstance(e, ToolRunning)}
    assert running == {"1.0", "1.2"}
    (suspended,) = [e for e in events if isinstance(e, RunSuspended)]
    assert suspended.held == ("1.3",) and suspended.iteration == 1
    answered = [e.answer for e in events if isinstance(e, PermissionAnswered)]
    assert answered == ["suspended"]


@pytest.mark.parametrize(
    ("decision", "expected_b"), [("allow", True), ("always", True), ("deny", False)]
)
async def test_resume_runs_the_approved_call_in_its_place_and_never_reruns_the_rest(
    tmp_path: Path, decision: str, expected_b: bool
) -> None:
    log = tmp_path / "ran.log"
    agent = _agent(log, ScriptedModel(_batch()))  # type: ignore[arg-type]
    first, _ = await _run(agent, "go")
    with anyio.fail_after(30):
        result = await agent.resume(first.suspension, {"1.1": decision})  # type: ignore[attr-defined]
    assert result.completion_reason is CompletionReason.COMPLETED, result.detail
    ran = _ran(log)
    assert sorted(ran[:2]) == ["a", "c"]  # before the suspension, once
    assert ran[2:] == (["b", "d"] if expected_b else ["d"])  # b before d: serial order
    assert_provider_valid(result.messages)
    answers = result.messages[2].tool_results
    assert [r.call_id for r in answers] == ["a", "b", "c", "d"]
    assert [r.text for r in answers if not r.is_error] == (
        ["did a", "did b", "did c", "did d"]
        if expected_b
        else ["did a", "did c", "did d"]
    )
    if not expected_b:
        assert answers[1].is_error and "denied by the user" in answers[1].text
    assert result.output == "done"


async def test_every_call_that_asks_at_once_is_listed_and_always_covers_later_ones(
    tmp_path: Path,
) -> None:
    """Two asking calls that may overlap both wait; an "always" holds for the session."""
    log = tmp_path / "ran.log"

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def peek(tag: str) -> str:
        """Asks, but may overlap."""
        with log.open("a") as f:
            f.write(tag + "\n")
        return f"saw {tag}"

    model = ScriptedModel(
        [
            use(call("p", "peek", tag="p"), call("q", "peek", tag="q")),
            use(call("r", "peek", tag="r")),  # covered by the "always"
            say("done"),
        ]
    )
    config = AgentConfig(permissions=PermissionRules(ask=["peek"]), on_ask="suspend")
    agent = Agent(model, [peek], config=config)
    first, _ = await _run(agent, "go")
    assert first.completion_reason is CompletionReason.SUSPENDED  # type: ignore[attr-defined]
    assert [p.key for p in first.pending] == ["1.0", "1.1"]  # type: ignore[attr-defined]
    assert _ran(log) == []
    with anyio.fail_after(30):
        result = await agent.resume(
            first.suspension,  # type: ignore[attr-defined]
            {"1.0": "always", "1.1": "deny"},
        )
    assert result.completion_reason is CompletionReason.COMPLETED, result.detail
    assert _ran(log) == ["p", "r"]  # q denied, never ran; r not asked again
    assert result.messages[2].tool_results[1].is_error


async def test_a_held_call_that_asks_on_resume_suspends_again_keeping_what_ran(
    tmp_path: Path,
) -> None:
    log = tmp_path / "ran.log"
    model = ScriptedModel(
        [
            use(
                call("x", "guarded", tag="x"),
                call("y", "guarded", tag="y"),
                call("z", "free", tag="z"),
            ),
            say("done"),
        ]
    )
    agent = _agent(log, model)
    first, _ = await _run(agent, "go")
    assert [p.key for p in first.pending] == ["1.0"]  # type: ignore[attr-defined]
    assert _ran(log) == ["z"]  # independent of x: it ran; y waits behind x
    with anyio.fail_after(30):
        second = await agent.resume(first.suspension, {"1.0": "allow"})  # type: ignore[attr-defined]
    assert second.completion_reason is CompletionReason.SUSPENDED
    assert [p.key for p in second.pending] == ["1.1"]
    assert second.suspension is not None
    assert sorted(second.suspension.done) == ["1.0", "1.2"]
    assert _ran(log) == ["z", "x"]
    with anyio.fail_after(30):
        third = await agent.resume(second.suspension, {"1.1": "deny"})
    assert third.completion_reason is CompletionReason.COMPLETED, third.detail
    assert _ran(log) == ["z", "x"]
    texts = [r.text for r in third.messages[2].tool_results]
    assert texts[0] == "did x" and texts[2] == "did z"
    assert "denied by the user" in texts[1]


async def test_a_suspension_resumes_once(tmp_path: Path) -> None:
    log = tmp_path / "ran.log"
    agent = _agent(log, ScriptedModel(_batch()))  # type: ignore[arg-type]
    first, _ = await _run(agent, "go")
    suspension = first.suspension  # type: ignore[attr-defined]
    with anyio.fail_after(30):
        await agent.resume(suspension, {"1.1": "allow"})
        with pytest.raises(UsageError, match="resumed already"):
            await agent.resume(suspension, {"1.1": "allow"})
    assert _ran(log).count("b") == 1 and _ran(log).count("d") == 1


@pytest.mark.parametrize(
    ("decisions", "message"),
    [
        ({}, "undecided: 1.1"),
        ({"1.1": "yes"}, "expected one of"),
        ({"1.1": "allow", "1.3": "allow"}, "no call waits under key"),
    ],
)
async def test_bad_decisions_are_refused_and_leave_the_suspension_resumable(
    tmp_path: Path, decisions: dict[str, str], message: str
) -> None:
    log = tmp_path / "ran.log"
    agent = _agent(log, ScriptedModel(_batch()))  # type: ignore[arg-type]
    first, _ = await _run(agent, "go")
    suspension = first.suspension  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match=message):
        await agent.resume(suspension, decisions)
    with anyio.fail_after(30):
        result = await agent.resume(suspension, {"1.1": "allow"})
    assert result.completion_reason is CompletionReason.COMPLETED
    assert sorted(_ran(log)) == ["a", "b", "c", "d"]


async def test_without_on_ask_an_unanswerable_ask_is_still_denied(
    tmp_path: Path,
) -> None:
    """The default is unchanged: a run nobody resumes must not sit waiting."""
    log = tmp_path / "ran.log"
    config = AgentConfig(permissions=PermissionRules(ask=["guarded"]))
    agent = Agent(ScriptedModel(_batch()), _tools(log), config=config)  # type: ignore[arg-type]
    with anyio.fail_after(30):
        result = await agent.run("go")
    assert result.completion_reason is CompletionReason.COMPLETED
    assert result.pending == () and result.suspension is None
    assert sorted(_ran(log)) == ["a", "c", "d"]
    assert "no one to ask" in result.messages[2].tool_results[1].text


async def test_an_ask_handler_wins_over_suspension(tmp_path: Path) -> None:
    log = tmp_path / "ran.log"

    async def approve(call: object, reason: str) -> str:
        return "allow"

    agent = _agent(log, ScriptedModel(_batch()), ask=approve)  # type: ignore[arg-type]
    with anyio.fail_after(30):
        result = await agent.run("go")
    assert result.completion_reason is CompletionReason.COMPLETED
    assert sorted(_ran(log)) == ["a", "b", "c", "d"]
