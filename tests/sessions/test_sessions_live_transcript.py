"""The stored transcript is the loop's, exactly, after every event of a run.

One scripted run exercises every message the loop adds without a tool event:
a context reminder in the prompt, input queued with `run.send()`, hook
context, a large result replaced by its preview at the end of the batch, a
stop-hook continuation and a compaction. After each event the store (read
through a second connection, as a resuming process would) must equal the
transcript the events describe, and that transcript must be what the model was
sent at every call and what the run returned at the end.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sessions_support import Bench, call, say, use

from toolweave.events import (
    CompactBoundary,
    Event,
    MessageAppended,
    ModelCallStarted,
    RunFinished,
    ToolResultReady,
    TranscriptReplaced,
)
from toolweave.execution import (
    ExecutionConfig,
    Hooks,
    PostToolUseDecision,
    PostToolUseInput,
    StopDecision,
    StopInput,
)
from toolweave.loop import (
    Agent,
    AgentConfig,
    AgentRun,
    ContextBlock,
    ContextKind,
    ContextRequest,
    transcript_problems,
)
from toolweave.messages import Message, ModelResponse, Usage
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.sessions import SessionRecorder, SQLiteSessionStore
from toolweave.tools import Concurrency, SessionState, Tool, tool

pytestmark = pytest.mark.anyio

BIG = "x" * 1_000


@tool(concurrency=Concurrency.SAFE)
async def big(tag: str) -> str:
    """A large result."""
    return f"{tag}:{BIG}"


def _hooks() -> Hooks:
    hooks = Hooks()

    @hooks.post_tool_use("big")
    def note(data: PostToolUseInput) -> PostToolUseDecision:
        return PostToolUseDecision(additional_context="results are synthetic")

    @hooks.stop
    def once_more(data: StopInput) -> StopDecision | None:
        return None if data.stop_hook_active else StopDecision(reason="double-check")

    return hooks


def _facts(request: ContextRequest) -> ContextBlock:
    return ContextBlock(ContextKind.ATTACHMENT, "facts", "the sky is blue")


def _agent(tmp_path: Path, model: ScriptedModel, tools: list[Tool]) -> Agent:
    config = AgentConfig(
        hooks=_hooks(),
        context_providers=[_facts],
        execution=ExecutionConfig(batch_result_chars=1_500, preview_chars=200),
        compaction_threshold=0.8,
        compaction_keep_recent=2,
        compaction_model=ScriptedModel([say("SUMMARY: two big results")]),
        workspace=tmp_path,
    )
    state = SessionState(workspace=tmp_path, results_dir=tmp_path / "tool-results")
    return Agent(model, tools, config=config, state=state)


def _script(holder: list[AgentRun]) -> ScriptedModel:
    def first(request: ModelRequest) -> ModelResponse:
        holder[0].send("also note this")  # queued: joins the results message
        return use(call("a", "big", tag="a"), call("b", "big", tag="b"))

    # The second answer reports a context near the window: compaction follows.
    near_full = say("first answer")
    near_full = ModelResponse(near_full.content, near_full.stop_reason, Usage(900, 5))
    return ScriptedModel([first, near_full, say("done")], context_window=1_000)


def _apply(mirror: list[Message], event: Event) -> None:
    """The transcript as the events describe it (independent of the recorder)."""
    if isinstance(event, MessageAppended):
        assert event.index == len(mirror)
        mirror.append(event.message)
    elif isinstance(event, TranscriptReplaced):
        mirror[:] = event.messages


async def test_the_store_equals_the_loop_transcript_after_every_event(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolweave.sessions")
    store = SQLiteSessionStore(tmp_path / "s.db")
    reader = SQLiteSessionStore(store.path)  # what another process would read
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    holder: list[AgentRun] = []
    model = _script(holder)
    mirror: list[Message] = []
    sent: list[list[Message]] = []  # the transcript at each ModelCallStarted
    compacted_away: list[Message] = []
    events: list[Event] = []
    async with _agent(tmp_path, model, [big]).open_run("go") as run:
        holder.append(run)
        async for event in run.events():
            recorder.record(event)
            if isinstance(event, TranscriptReplaced):
                compacted_away = list(mirror)
            _apply(mirror, event)
            events.append(event)
            assert reader.messages(sid) == mirror, type(event).__name__
            if isinstance(event, ModelCallStarted):
                sent.append(list(mirror))
    result = await run.wait()
    assert result.ok, result.detail
    assert mirror == list(result.messages) == reader.messages(sid)
    assert sent == [list(r.messages) for r in model.requests]  # what the model saw
    assert caplog.records == []  # the end-of-run check found nothing to repair
    assert transcript_problems(mirror) == []

    # Every kind of message the old reconstruction missed was there as it went.
    first = sent[1]
    assert "<system-reminder>" in first[0].text and "the sky is blue" in first[0].text
    results = first[2]
    ready = {
        e.result.call_id: e.result for e in events if isinstance(e, ToolResultReady)
    }
    previewed = [r for r in results.tool_results if r != ready[r.call_id]]
    assert len(previewed) == 1  # replaced by finish_batch after ToolResultReady
    assert "<persisted-output>" in previewed[0].text and BIG not in previewed[0].text
    assert "results are synthetic" in results.text and "also note this" in results.text
    assert sent[2][0].text.endswith("SUMMARY: two big results")  # compacted
    assert sent[2][-1].text == "A stop hook asked you to continue:\ndouble-check"
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("TranscriptReplaced") == 1
    replaced = next(e for e in events if isinstance(e, TranscriptReplaced))
    boundary = next(e for e in events if isinstance(e, CompactBoundary))
    assert replaced.reason == boundary.reason == "auto"
    assert len(replaced.messages) == boundary.messages_after
    assert reader.messages(sid, archived=True) == compacted_away  # never deleted
    assert isinstance(events[-1], RunFinished)
    reader.close()
    store.close()


async def test_a_crash_mid_batch_leaves_the_response_on_record(tmp_path: Path) -> None:
    """The assistant message is appended before its tools run, never after."""
    bench = Bench()
    model = ScriptedModel([use(call("hold", "slow", key="k")), say("ok")])
    events: list[Event] = []
    async with Agent(model, bench.tools()).open_run("go") as run:
        async for event in run.events():
            events.append(event)
            if isinstance(event, MessageAppended) and event.message.tool_calls:
                await bench.slow_started.wait()
                bench.release.set()
    appended = [e.index for e in events if isinstance(e, MessageAppended)]
    assert appended == [0, 1, 2, 3]
    names = [type(e).__name__ for e in events]
    response_at = names.index("MessageAppended", names.index("ModelCallFinished"))
    assert response_at < names.index("ToolResultReady")
    assert [m.role for m in run.result.messages] == [  # type: ignore[union-attr]
        "user",
        "assistant",
        "user",
        "assistant",
    ]
