"""Red team: store + resume round trips of sessions whose ids repeat, are empty or
are spelled for another provider, with large (persisted) outputs.

After every round trip the stored transcript must be what the run saw, each
result its own call's (its own preview, its own saved file), and the history a
resumed run sends must be valid for every provider: unique ids spelled as the
provider accepts, each result paired with its call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from sessions_support import DEAD_OWNER, say, use

from toolweave.events import RunFinished, ToolResultReady
from toolweave.loop import Agent, transcript_problems
from toolweave.messages import Message, ToolCall
from toolweave.models import ScriptedModel
from toolweave.models._anthropic_convert import anthropic_messages
from toolweave.models._openai_chat_convert import chat_messages
from toolweave.models._openai_responses_convert import responses_input
from toolweave.sessions import SessionRecorder, SQLiteSessionStore, prepare_resume
from toolweave.tools import Access, Concurrency, Interrupt, SessionState, Tool, tool

pytestmark = pytest.mark.anyio

BIG = 3_000  # over max_result_chars: persisted with a preview


def fetch(call_id: str, tag: str, size: int = 10, name: str = "fetch") -> ToolCall:
    return ToolCall(call_id, name, {"tag": tag, "size": size})


def _output(tag: str, size: int) -> str:
    head = f"<{tag}>"
    return (head + "." * size)[:size] if size > len(head) else head


class Tools:
    """`fetch` (SAFE), `store` (SEQUENTIAL) and `hold` (blocks until released)."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.held = anyio.Event()
        self.release = anyio.Event()

    def build(self) -> list[Tool]:
        tools = self

        @tool(
            concurrency=Concurrency.SAFE,
            access=lambda a: Access(),
            max_result_chars=1000,
        )
        async def fetch(tag: str, size: int) -> str:
            """Output that starts with the tag."""
            tools.ran.append(tag)
            return _output(tag, size)

        @tool(max_result_chars=1000)
        async def store(tag: str, size: int) -> str:
            """Like fetch, exclusive."""
            tools.ran.append(tag)
            return _output(tag, size)

        @tool(
            access=lambda a: Access(writes=["k:held"]),
            interrupt=Interrupt.CANCEL,
            max_result_chars=1000,
        )
        async def hold(tag: str, size: int) -> str:
            """Blocks until released (the process dies meanwhile)."""
            tools.ran.append(tag)
            tools.held.set()
            await tools.release.wait()
            return _output(tag, size)

        return [fetch, store, hold]


async def _record(
    store: SQLiteSessionStore,
    sid: str,
    turns: list[object],
    tools: Tools,
    results: Path,
    *,
    prompt: str = "go",
    history: tuple[Message, ...] = (),
    owner: str | None = None,
    recorded: anyio.Event | None = None,
    recorders: list[SessionRecorder] | None = None,
) -> RunFinished | None:
    """Run the scripted turns, recorded (attached); None if cancelled."""
    kwargs = {} if owner is None else {"owner": owner}
    recorder = SessionRecorder(store, sid, model="scripted", **kwargs)
    if recorders is not None:
        recorders.append(recorder)
    state = SessionState(workspace=results.parent, results_dir=results)
    agent = Agent(ScriptedModel(turns), tools.build(), state=state)  # type: ignore[arg-type]
    finished = None
    try:
        async for event in agent.run_stream(
            prompt, history=list(history), recorder=recorder
        ):
            if recorded is not None and isinstance(event, ToolResultReady):
                recorded.set()
            if isinstance(event, RunFinished):
                finished = event
    finally:
        await agent.aclose()
    return finished


def _check_wire(messages: list[Message]) -> None:
    """What each provider is sent: unique ids it accepts, each result its call's."""
    anthropic = anthropic_messages(messages)
    uses = [
        b["id"]
        for m in anthropic
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    answers = [
        b["tool_use_id"]
        for m in anthropic
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert len(set(uses)) == len(uses) and answers == uses
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", u) for u in uses), uses

    chat = chat_messages(None, messages)
    calls = [c["id"] for m in chat for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in chat if m["role"] == "tool"]
    assert len(set(calls)) == len(calls) and results == calls
    assert all(0 < len(c) <= 40 for c in calls), calls

    items = responses_input(messages)
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert len(set(calls)) == len(calls) and outputs == calls


def _check_own_results(messages: list[Message], saved: dict[str, str]) -> None:
    """Every answered call shows its own output, or its own preview and file."""
    calls = [c for m in messages for c in m.tool_calls]
    answers = [r for m in messages for r in m.tool_results]
    assert len(calls) == len(answers)
    paths: list[str] = []
    for call, answer in zip(calls, answers, strict=True):
        tag, size = call.input["tag"], call.input["size"]
        if answer.is_error:
            continue  # answered by resume (lost / not run)
        assert f"<{tag}>" in answer.text
        if size == BIG:
            path = answer.text.split("saved to: ")[1].split("\n")[0]
            assert saved[path].startswith(f"<{tag}>")  # its own file
            paths.append(path)
        else:
            assert answer.text == _output(tag, size)
    assert len(set(paths)) == len(paths)


NONE = cast("str", None)  # what an untyped model may send
LONG = "fc_" + "0123456789" * 6  # a Responses-style id, too long for Chat

SESSIONS = {
    "call_0 everywhere": (
        [
            [fetch("call_0", "a", BIG), fetch("call_0", "b")],
            [fetch("call_0", "c", BIG, "store")],
        ],
        [[fetch("call_0", "d", BIG), fetch("call_0", "e", BIG)]],
    ),
    "empty ids": (
        [[fetch("", "a", BIG), fetch("", "b", BIG)], [fetch("", "c")]],
        [[fetch("", "d", BIG, "store"), fetch("", "e")]],
    ),
    "kimi-style and long ids, repeated": (
        [
            [fetch("functions.fetch:0", "a", BIG), fetch("functions.fetch:0", "b")],
            [fetch(LONG, "c", BIG), fetch(LONG, "d", BIG)],
        ],
        [[fetch("functions.fetch:0", "e", BIG), fetch(LONG, "f")]],
    ),
    "None ids (a model of the user's own)": (
        [[fetch(NONE, "a", BIG), fetch(NONE, "b", BIG)], [fetch(NONE, "c")]],
        [[fetch(NONE, "d", BIG, "store"), fetch("", "e")]],
    ),
    "ids that collide once respelled": (
        [[fetch("a.b", "a", BIG), fetch("a_b", "b", BIG), fetch("a:b", "c")]],
        [[fetch("a_b_2", "d", BIG), fetch("a.b", "e")]],
    ),
}


@pytest.mark.parametrize("name", list(SESSIONS))
async def test_a_session_round_trips_through_store_and_resume(
    tmp_path: Path, name: str
) -> None:
    first_turns, later_turns = SESSIONS[name]
    results = tmp_path / "results"
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace=str(tmp_path), model="scripted", title="t").id
    tools = Tools()
    first = await _record(
        store, sid, [*(use(*t) for t in first_turns), say("one")], tools, results
    )
    assert first is not None
    assert store.messages(sid) == list(first.messages)
    store.close()

    store = SQLiteSessionStore(db)  # a new process
    plan = prepare_resume(store, sid, prompt="more")
    assert list(plan.history) == list(first.messages)
    assert transcript_problems(plan.history) == []
    _check_wire(list(plan.history))
    second = await _record(
        store,
        sid,
        [*(use(*t) for t in later_turns), say("two")],
        tools,
        results,
        prompt=plan.prompt,
        history=plan.history,
    )
    assert second is not None
    stored = store.messages(sid)
    assert stored == list(second.messages)
    assert [c.id for m in stored for c in m.tool_calls] == [
        c.id or "" for t in [*first_turns, *later_turns] for c in t
    ]  # the store keeps the model's ids (None is kept as empty)
    saved = {str(p): p.read_text() for p in results.rglob("*.txt")}
    _check_own_results(stored, saved)
    _check_wire(stored)
    assert transcript_problems(stored) == []
    expected = [c.input["tag"] for t in [*first_turns, *later_turns] for c in t]
    assert sorted(tools.ran) == sorted(expected)  # each call ran once
    store.close()


async def test_a_crash_mid_batch_with_large_outputs_and_one_id(
    tmp_path: Path, crash_copy: Any
) -> None:
    """A finished call was persisted, one was running, one never started — all
    ``call_0``. Resume answers each for itself, the finished one keeps its own
    preview and file, and a later call_0 gets a file of its own."""
    results = tmp_path / "results"
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace=str(tmp_path), model="scripted", title="t").id
    tools = Tools()
    batch = use(
        fetch("call_0", "x", BIG),
        fetch("call_0", "y", BIG, "hold"),
        fetch("call_0", "z", BIG, "store"),  # after hold: never starts
    )

    first_done = anyio.Event()
    recorders: list[SessionRecorder] = []
    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            await _record(
                store,
                sid,
                [batch],
                tools,
                results,
                owner=DEAD_OWNER,
                recorded=first_done,
                recorders=recorders,
            )

        tg.start_soon(consume)
        await tools.held.wait()
        await first_done.wait()  # x finished (persisted)
        await anyio.wait_all_tasks_blocked()
        await recorders[0].flush()
        crashed = crash_copy(store, tmp_path / "crashed.db")  # the process dies
        tg.cancel_scope.cancel()

    store.close()
    store = crashed
    plan = prepare_resume(store, sid)
    done, lost, skipped = plan.history[-1].tool_results
    assert done.text.startswith("<persisted-output>") and "<x>" in done.text
    assert lost.is_error and skipped.is_error
    assert [r.call.key for r in plan.lost] == ["1.1"]
    assert [r.call.key for r in plan.skipped] == ["1.2"]
    assert transcript_problems(plan.history) == []
    _check_wire(list(plan.history))

    second = await _record(
        store,
        sid,
        [use(fetch("call_0", "w", BIG)), say("ok")],
        tools,
        results,
        prompt=plan.prompt,
        history=plan.history,
    )
    assert second is not None
    stored = store.messages(sid)
    saved = {str(p): p.read_text() for p in results.rglob("*.txt")}
    _check_own_results(stored, saved)
    _check_wire(stored)
    assert sorted(tools.ran) == ["w", "x", "y"]  # nothing ran again
    store.close()
