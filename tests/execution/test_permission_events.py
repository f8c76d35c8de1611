"""A permission ask is an event pair: PermissionAsked when the call starts waiting
for a person, PermissionAnswered when the wait ends, whatever ended it
(issue 27, item 8). Through `tw.Agent` with `ScriptedModel`; overlap and order by
rendezvous, the waits' lengths exact on trio's virtual clock.
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import pytest

import toolweave as tw
from toolweave.events import (
    Event,
    PermissionAnswered,
    PermissionAsked,
    ToolResultReady,
    ToolRunning,
    ToolUseStarted,
)
from toolweave.execution import PermissionRules
from toolweave.models import ScriptedModel
from toolweave.scheduling import Dispatcher, StartedWithAccess

pytestmark = pytest.mark.anyio


@tw.tool(access=lambda a: tw.Access(writes=[f"k:{a['key']}"]))
async def guarded(key: str) -> str:
    """A write that needs the user's approval."""
    return f"wrote {key}"


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access(reads=["k:r"]))
async def reader() -> str:
    """A read that needs nobody's approval."""
    return "read"


async def _events(
    calls: list[tw.ToolCall], answer: Any, *, ask: list[str] | None = None
) -> list[Event]:
    model = ScriptedModel(
        [
            tw.ModelResponse(calls, stop_reason=tw.StopReason.TOOL_USE),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )
    config = tw.AgentConfig(
        permissions=PermissionRules(ask=ask or ["guarded"]), ask=answer
    )
    agent = tw.Agent(model, [guarded, reader], config=config)
    return [event async for event in agent.run_stream("go")]


def _kinds(events: list[Event], key: str) -> list[str]:
    picked = []
    for e in events:
        if isinstance(e, PermissionAsked | PermissionAnswered | ToolRunning):
            if e.key == key:
                picked.append(type(e).__name__)
        elif isinstance(e, ToolResultReady) and e.call.key == key:
            picked.append("ToolResultReady")
    return picked


@pytest.mark.parametrize(
    ("given", "told", "ran"),
    [("allow", "allow", True), ("always", "always", True), ("deny", "deny", False)],
)
async def test_an_ask_is_told_before_and_after_it_is_answered(
    given: str, told: str, ran: bool, anyio_backend_name: str
) -> None:
    async def answer(call: tw.ToolCall, reason: str) -> str:
        await anyio.sleep(5.6)  # the user thinking
        return given

    events = await _events([tw.ToolCall("c1", "guarded", {"key": "a"})], answer)
    (asked,) = [e for e in events if isinstance(e, PermissionAsked)]
    (answered,) = [e for e in events if isinstance(e, PermissionAnswered)]
    assert (asked.call_id, asked.tool, asked.key) == ("c1", "guarded", "1.0")
    assert asked.reason  # what the user is told
    assert (answered.answer, answered.key) == (told, "1.0")
    expected = ["PermissionAsked", "PermissionAnswered"]
    expected += ["ToolRunning", "ToolResultReady"] if ran else ["ToolResultReady"]
    assert _kinds(events, "1.0") == expected
    if anyio_backend_name == "trio":  # virtual time: exact
        assert answered.at - asked.at == 5.6


async def test_a_call_waiting_behind_another_ask_is_waiting_for_a_person_too() -> None:
    """Asks are put one at a time: the second call's wait spans the first answer."""
    asked: list[str] = []

    async def answer(call: tw.ToolCall, reason: str) -> Literal["always"]:
        asked.append(call.id)
        await anyio.wait_all_tasks_blocked()  # the other call now waits its turn
        return "always"  # covers the second call: it is never asked itself

    events = await _events(
        [
            tw.ToolCall("c1", "guarded", {"key": "a"}),
            tw.ToolCall("c2", "guarded", {"key": "b"}),  # no conflict: overlaps c1
        ],
        answer,
    )
    (first,) = asked  # whichever reached the question first (trio shuffles)
    second = "c2" if first == "c1" else "c1"
    waits = [
        (type(e).__name__, e.call_id)
        for e in events
        if isinstance(e, PermissionAsked | PermissionAnswered)
    ]
    assert waits == [
        ("PermissionAsked", first),
        ("PermissionAsked", second),
        ("PermissionAnswered", first),
        ("PermissionAnswered", second),
    ]
    answers = [e.answer for e in events if isinstance(e, PermissionAnswered)]
    assert answers == ["always", "approved"]


async def test_a_handler_that_fails_or_a_cancelled_wait_still_ends_the_wait() -> None:
    async def broken(call: tw.ToolCall, reason: str) -> str:
        raise RuntimeError("the terminal went away")

    events = await _events([tw.ToolCall("c1", "guarded", {"key": "a"})], broken)
    (answered,) = [e for e in events if isinstance(e, PermissionAnswered)]
    assert answered.answer == "failed"
    (ready,) = [e for e in events if isinstance(e, ToolResultReady)]
    assert ready.result.is_error and "ask handler failed" in ready.result.text

    async def strange(call: tw.ToolCall, reason: str) -> str:
        return "perhaps"

    events = await _events([tw.ToolCall("c1", "guarded", {"key": "a"})], strange)
    assert [e.answer for e in events if isinstance(e, PermissionAnswered)] == ["failed"]


async def test_an_interrupt_while_the_user_thinks_ends_the_wait_as_cancelled() -> None:
    asked = anyio.Event()

    async def never(call: tw.ToolCall, reason: str) -> str:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    model = ScriptedModel(
        [
            tw.ModelResponse(
                [tw.ToolCall("c1", "cancellable", {})],
                stop_reason=tw.StopReason.TOOL_USE,
            ),
        ]
    )

    @tw.tool(interrupt=tw.Interrupt.CANCEL, access=tw.Access(writes=["k:c"]))
    async def cancellable() -> str:
        """A write that needs approval and may be cancelled by an interrupt."""
        return "never"

    config = tw.AgentConfig(permissions=PermissionRules(ask=["cancellable"]), ask=never)
    agent = tw.Agent(model, [cancellable], config=config)
    events: list[Event] = []
    async with agent.open_run("go") as run:

        async def stop() -> None:
            await asked.wait()
            run.interrupt()

        async with anyio.create_task_group() as tg:
            tg.start_soon(stop)
            async for event in run.events():
                events.append(event)
    answers = [e.answer for e in events if isinstance(e, PermissionAnswered)]
    assert answers == ["cancelled"]


async def test_no_ask_no_event() -> None:
    async def answer(call: tw.ToolCall, reason: str) -> str:
        raise AssertionError("nobody should be asked")

    events = await _events([tw.ToolCall("c1", "reader", {})], answer)
    assert not [
        e for e in events if isinstance(e, PermissionAsked | PermissionAnswered)
    ]


async def test_an_admitted_call_carries_the_access_it_was_scheduled_by() -> None:
    async def answer(call: tw.ToolCall, reason: str) -> str:
        return "allow"

    events = await _events(
        [tw.ToolCall("c1", "reader", {}), tw.ToolCall("c2", "guarded", {"key": "b"})],
        answer,
    )
    started = {
        e.call.id: (e.reads, e.writes) for e in events if isinstance(e, ToolUseStarted)
    }
    assert started == {"c1": (("k:r",), ()), "c2": ((), ("k:b",))}
    alone = await _events([tw.ToolCall("c1", "reader", {})], answer)
    (one,) = [e for e in alone if isinstance(e, ToolUseStarted)]
    assert (one.reads, one.writes) == (None, None)  # run alone: not classified


async def test_the_scheduler_on_its_own_tells_a_started_with_access_listener() -> None:
    @tw.tool
    async def undeclared() -> str:
        """SEQUENTIAL, declaring nothing: a barrier."""
        return "u"

    registry = tw.ToolRegistry([reader, undeclared])
    seen: list[tuple[str, tw.Access | None]] = []
    plain: list[str] = []

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        return tw.ToolResult(call.id, "ok")

    async with Dispatcher(tw.ConcurrencyConfig()) as dispatcher:
        listener = StartedWithAccess(
            lambda call, access: seen.append((call.id, access))
        )
        calls = [tw.ToolCall("a", "reader", {}), tw.ToolCall("b", "undeclared", {})]
        await dispatcher.dispatch(calls, registry, runner, on_started=listener)
        await dispatcher.dispatch(calls[:1], registry, runner, on_started=listener)
        await dispatcher.dispatch(
            calls, registry, runner, on_started=lambda call: plain.append(call.id)
        )
    assert seen == [
        ("a", tw.Access(reads=["k:r"])),
        ("b", tw.Access.barrier()),
        ("a", None),  # a call run alone is not classified
    ]
    assert plain == ["a", "b"]  # a plain listener is called as before
