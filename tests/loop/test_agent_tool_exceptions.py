"""Exceptions tell the truth through the Agent (issue 13, item 7).

A tool that raises CancelledError by itself is an error result and the run goes
on; a tool's KeyboardInterrupt/SystemExit reaches the caller of `run()` as that
same type on both backends, after every call of its batch is answered in the
transcript and in the session store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest
from loop_support import call, say, use

import toolweave as tw
from toolweave.events import Event, RunFinished
from toolweave.loop import Agent, transcript_problems
from toolweave.messages import Message, ToolResult
from toolweave.models import ScriptedModel
from toolweave.sessions import SessionRecorder, SQLiteSessionStore
from toolweave.tools import Concurrency, tool

pytestmark = pytest.mark.anyio


@tool(concurrency=Concurrency.SAFE)
async def fine(text: str) -> str:
    """Echo."""
    return text


@tool(concurrency=Concurrency.SAFE)
async def gives_up() -> str:
    """Raise CancelledError by itself."""
    raise asyncio.CancelledError()


async def test_a_self_raised_cancel_is_an_error_result_and_the_run_completes() -> None:
    model = ScriptedModel(
        [use(call("a", "gives_up"), call("b", "fine", text="ok")), say("done")]
    )
    result = await Agent(model, [gives_up, fine]).run("go")
    assert result.completion_reason is tw.CompletionReason.COMPLETED, result.detail
    results = result.messages[-2].content
    assert isinstance(results, tuple | list)
    first, second = results
    assert isinstance(first, ToolResult) and first.is_error
    assert "CancelledError" in first.text
    assert second == ToolResult("b", "ok")


@pytest.mark.parametrize("fatal", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("width", [1, 3])
async def test_a_fatal_tool_exception_reaches_run_as_itself_with_the_batch_on_record(
    tmp_path: Path, fatal: type[BaseException], width: int
) -> None:
    raised = fatal()
    done: list[str] = []
    both_done = anyio.Event()

    @tool(concurrency=Concurrency.SAFE)
    async def ok(text: str) -> str:
        """Echo; the second one lets `boom` go."""
        done.append(text)
        if len(done) == 2:
            both_done.set()
        return text

    @tool(concurrency=Concurrency.SAFE)
    async def boom() -> str:
        """Raise the fatal exception (after its siblings finished, when it has any)."""
        if width > 1:
            await both_done.wait()
        raise raised

    calls = [
        call("k", "boom"),
        call("f1", "ok", text="1"),
        call("f2", "ok", text="2"),
    ]
    model = ScriptedModel([use(*calls[:width]), say("never reached")])
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    events: list[Event] = []

    async def drive() -> None:
        async with Agent(model, [boom, ok]).open_run("go") as run:
            async for event in run.events():
                recorder.record(event)
                events.append(event)

    with pytest.raises(fatal) as info:
        await drive()
    assert info.value is raised and type(info.value) is fatal  # no exception group
    stored = store.messages(sid)
    assert transcript_problems(stored) == []
    last = stored[-1]
    assert isinstance(last, Message) and last.role == "user"
    answered = [r for r in last.content if isinstance(r, ToolResult)]
    assert [r.call_id for r in answered] == [c.id for c in calls[:width]]
    assert answered[0].is_error and fatal.__name__ in answered[0].text
    assert [r.text for r in answered[1:]] == ["1", "2"][: width - 1]
    done = events[-1]
    assert isinstance(done, RunFinished)
    assert done.reason is tw.CompletionReason.INTERRUPTED
    assert done.detail == f"a tool raised {fatal.__name__}"
    store.close()


async def test_run_itself_raises_the_same_type() -> None:
    @tool(concurrency=Concurrency.SAFE)
    async def boom() -> str:
        """Raise SystemExit."""
        raise SystemExit(7)

    model = ScriptedModel([use(call("k", "boom"), call("f", "fine", text="x"))])
    with pytest.raises(SystemExit) as info:
        await Agent(model, [boom, fine]).run("go")
    assert type(info.value) is SystemExit and info.value.code == 7
