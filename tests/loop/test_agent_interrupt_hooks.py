"""Interrupting calls while their hooks run (issue 13 item 11d): every call answered, nothing lost.

Rendezvous: each hook says it is inside and waits; the run is interrupted only
once every hook is inside. Each tool's result carries a context change, so a
call that ran but lost its change would show. The store records the same.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from loop_support import assert_provider_valid, call, scripted, use

from toolweave.events import CompletionReason, Event, ToolResultReady
from toolweave.execution import (
    Hooks,
    PostToolUseDecision,
    PostToolUseInput,
    PreToolUseDecision,
    PreToolUseInput,
    ToolOutput,
)
from toolweave.loop import Agent, AgentConfig, AgentRun
from toolweave.messages import ToolResult
from toolweave.sessions import CallState, SessionRecorder, SQLiteSessionStore
from toolweave.tools import Access, Concurrency, Interrupt, Tool, tool

pytestmark = pytest.mark.anyio


class Room:
    """Hooks wait inside until released; `all_in` fires when `expected` are inside."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.inside: list[str] = []
        self.all_in = anyio.Event()
        self.release = anyio.Event()
        self.ran: list[str] = []
        self.applied: list[str] = []

    async def enter(self, where: str) -> None:
        self.inside.append(where)
        if len(self.inside) == self.expected:
            self.all_in.set()
        await self.release.wait()

    def tool(self, name: str, interrupt: Interrupt) -> Tool:
        @tool(
            name=name,
            concurrency=Concurrency.SAFE,
            access=Access(),
            interrupt=interrupt,
        )
        async def work(tag: str) -> ToolOutput:
            """Record that it ran; its result changes shared context."""
            self.ran.append(tag)
            return ToolOutput(
                f"{tag} done", context_modifier=lambda: self.applied.append(tag)
            )

        return work

    def hooks(self, timeout: float | None = 60.0) -> Hooks:
        hooks = Hooks(timeout=timeout)

        @hooks.pre_tool_use("pre_*")
        async def hold_before(data: PreToolUseInput) -> PreToolUseDecision | None:
            await self.enter(f"pre:{data.call.id}")
            return None

        @hooks.post_tool_use("post_*")
        async def hold_after(data: PostToolUseInput) -> PostToolUseDecision | None:
            await self.enter(f"post:{data.call.id}")
            return None

        return hooks


@asynccontextmanager
async def consumed(
    agent: Agent, events: list[Event], recorder: SessionRecorder
) -> AsyncIterator[AgentRun]:
    async with agent.open_run("go") as run, anyio.create_task_group() as tg:

        async def consume() -> None:
            async for event in run.events():
                events.append(event)
                recorder.record(event)

        tg.start_soon(consume)
        yield run


def _setup(
    room: Room,
    *,
    block: Interrupt = Interrupt.BLOCK,
    hook_timeout: float | None = 60.0,
    **config: object,
) -> Agent:
    tools = [
        room.tool("plain", Interrupt.CANCEL),
        room.tool("pre_cancel", Interrupt.CANCEL),
        room.tool("pre_block", block),
        room.tool("post_cancel", Interrupt.CANCEL),
        room.tool("post_block", block),
    ]
    model = scripted(
        use(
            call("a", "plain", tag="a"),
            call("pc", "pre_cancel", tag="pc"),
            call("pb", "pre_block", tag="pb"),
            call("qc", "post_cancel", tag="qc"),
            call("qb", "post_block", tag="qb"),
        )
    )
    return Agent(
        model, tools, config=AgentConfig(hooks=room.hooks(hook_timeout), **config)
    )  # type: ignore[arg-type]


def _store(tmp_path: Path) -> tuple[SQLiteSessionStore, SessionRecorder]:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="", model="scripted", title="go").id
    return store, SessionRecorder(store, sid, model="scripted")


def _check_every_call_answered(
    results: tuple[ToolResult, ...], events: list[Event], store: SQLiteSessionStore
) -> dict[str, ToolResult]:
    answers = {r.call_id: r for r in results}
    assert list(answers) == ["a", "pc", "pb", "qc", "qb"]  # each call, in call order
    ready = [e.result.call_id for e in events if isinstance(e, ToolResultReady)]
    assert sorted(ready) == sorted(answers)  # each reported exactly once
    (session,) = store.list_sessions()
    stored = {c.call.id: c for c in store.calls(session.id)}
    assert {k: c.state for k, c in stored.items()} == dict.fromkeys(
        answers, CallState.FINISHED
    )
    assert {k: c.result for k, c in stored.items()} == answers
    return answers


async def test_interrupt_while_pre_and_post_hooks_run(tmp_path: Path) -> None:
    room = Room(expected=4)
    store, recorder = _store(tmp_path)
    events: list[Event] = []
    async with consumed(_setup(room), events, recorder) as run:
        with anyio.fail_after(30):
            await room.all_in.wait()
        assert sorted(room.inside) == ["post:qb", "post:qc", "pre:pb", "pre:pc"]
        run.interrupt()
        await anyio.wait_all_tasks_blocked()
        room.release.set()
    result = run.result
    assert result is not None
    assert result.completion_reason is CompletionReason.INTERRUPTED
    answers = _check_every_call_answered(result.messages[2].tool_results, events, store)
    store.close()
    # finished before the interrupt: kept as it was
    assert answers["a"].content == "a done"
    # CANCEL, held in its PreToolUse hook: stopped before the tool ran, and says so
    assert answers["pc"].synthetic and answers["pc"].is_error
    assert "never started" in answers["pc"].text
    # BLOCK calls run to their end, hooks included
    assert answers["pb"].content == "pb done" and answers["qb"].content == "qb done"
    # CANCEL, held in its PostToolUse hook: it *finished*; said so, output withheld
    qc = answers["qc"]
    assert qc.is_error and not qc.synthetic
    assert "finished" in qc.text and "qc done" not in qc.text
    # no context change of a tool that ran is lost
    assert sorted(room.ran) == ["a", "pb", "qb", "qc"]
    assert sorted(room.applied) == sorted(room.ran)
    assert_provider_valid(result.messages)


async def test_the_wall_clock_still_ends_a_run_held_in_post_hooks(
    tmp_path: Path, anyio_backend: object
) -> None:
    """The answer given for a call cut in its hooks does not swallow an outer stop.

    Every tool is CANCEL here: a BLOCK call runs to its end by contract, and its
    hooks here never end.
    """
    room = Room(expected=4)
    store, recorder = _store(tmp_path)
    events: list[Event] = []
    virtual = isinstance(anyio_backend, tuple)  # trio's MockClock: no real wait
    agent = _setup(room, block=Interrupt.CANCEL, max_wall_clock=5.0 if virtual else 0.3)
    with anyio.fail_after(60):
        async with consumed(agent, events, recorder) as run:
            await (
                room.all_in.wait()
            )  # nobody releases the hooks: only the budget ends it
    result = run.result
    assert result is not None
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    answers = _check_every_call_answered(result.messages[2].tool_results, events, store)
    store.close()
    assert answers["a"].content == "a done"
    assert all(answers[k].is_error for k in ("pc", "pb", "qc", "qb"))
    assert all("finished" in answers[k].text for k in ("qc", "qb"))
    assert sorted(room.ran) == ["a", "qb", "qc"]
    assert sorted(room.applied) == sorted(room.ran)


async def test_hung_hooks_of_block_calls_end_at_the_hook_timeout(
    tmp_path: Path, anyio_backend: object
) -> None:
    """A BLOCK call runs to its end, hooks included, but no hook runs past its timeout.

    Nobody releases the hooks: the user interrupts the run, the BLOCK calls
    wait for their hooks, and the hook timeout ends them.
    """
    virtual = isinstance(anyio_backend, tuple)
    room = Room(expected=4)
    store, recorder = _store(tmp_path)
    events: list[Event] = []
    agent = _setup(room, hook_timeout=60.0 if virtual else 0.5)
    with anyio.fail_after(600 if virtual else 30):
        async with consumed(agent, events, recorder) as run:
            await room.all_in.wait()
            run.interrupt()
    result = run.result
    assert result is not None
    assert result.completion_reason is CompletionReason.INTERRUPTED
    answers = _check_every_call_answered(result.messages[2].tool_results, events, store)
    store.close()
    assert answers["a"].content == "a done"
    # BLOCK calls: their hooks timed out, which fails the call (the tool never
    # ran after a PreToolUse timeout; it ran before a PostToolUse one)
    assert "TimeoutError" in answers["pb"].text and "TimeoutError" in answers["qb"].text
    assert sorted(room.ran) == ["a", "qb", "qc"]
    assert sorted(room.applied) == sorted(room.ran)


async def test_the_wall_clock_bounds_block_calls_held_in_their_hooks(
    tmp_path: Path, anyio_backend: object
) -> None:
    """The budget is a bound, not an interrupt (issue 24, item 9): BLOCK calls too.

    Nobody releases the hooks, whose own timeout is far away. At the deadline
    the calls held before their tool are answered "not run" (it never
    started); those held after it, within the bounded grace, "finished,
    output withheld", their context change kept.
    """
    virtual = isinstance(anyio_backend, tuple)
    room = Room(expected=4)
    store, recorder = _store(tmp_path)
    events: list[Event] = []
    agent = _setup(room, hook_timeout=600.0, max_wall_clock=5.0 if virtual else 0.2)
    start = anyio.current_time()
    with anyio.fail_after(60):
        async with consumed(agent, events, recorder) as run:
            await room.all_in.wait()
    result = run.result
    assert result is not None
    assert result.completion_reason is CompletionReason.BUDGET_EXCEEDED
    if virtual:  # the deadline, then the runner's grace for steps after a tool
        assert anyio.current_time() - start == pytest.approx(5.0 + 2.0)
    answers = _check_every_call_answered(result.messages[2].tool_results, events, store)
    store.close()
    assert answers["a"].content == "a done"
    for key in ("pc", "pb"):
        assert answers[key].synthetic and "never started" in answers[key].text
        assert "wall-clock budget" in answers[key].text
    for key in ("qc", "qb"):
        assert (
            "finished" in answers[key].text and f"{key} done" not in answers[key].text
        )
    assert sorted(room.ran) == ["a", "qb", "qc"]
    assert sorted(room.applied) == sorted(room.ran)
