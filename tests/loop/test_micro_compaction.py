"""Micro-compaction (issue 29, item 3): old tool results become one sticky stub.

Through `tw.Agent` and the official Anthropic and OpenAI Chat SDKs on a
loopback server: the requests the server received show which results were
cleared, that a stub reads byte-for-byte the same on every later request (the
prompt cache stays warm), that the full text is in the file the stub names,
and that recent results are untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from window_support import (
    KOREAN,
    PROVIDERS,
    LoopbackServer,
    calls_reply,
    model_for,
    text_reply,
    tool_result_texts,
)

import toolweave as tw
from toolweave._exceptions import ConfigError
from toolweave.events import CompactBoundary, CompletionReason, TranscriptReplaced
from toolweave.loop import AgentConfig, MicroCompaction, transcript_problems
from toolweave.loop._clearing import CLEARED_MARKER
from toolweave.sessions import SessionRecorder, SQLiteSessionStore
from toolweave.tools import tool

pytestmark = [
    pytest.mark.anyio,
    # see test_context_window: the openai SDK's generators under trio's finaliser
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio on its real clock (the SDKs wait on real sockets)."""
    return request.param


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as loopback:
        yield loopback
    assert not loopback.unexpected, loopback.unexpected
    assert not loopback.errors, loopback.errors


@tool
async def read_part(n: int) -> str:
    """One part of a document."""
    return f"part {n}\n" + KOREAN * 5


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_old_results_become_sticky_stubs(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    for i in range(4):
        server.script(calls_reply(provider, [(f"call_{i}", "read_part", {"n": i})]))
    server.script(text_reply(provider, "done"))
    model = model_for(provider, server.url, window=200_000)
    config = AgentConfig(
        micro_compaction=MicroCompaction(after_turns=2, min_chars=0),
        results_dir=tmp_path / "results",
    )
    agent = tw.Agent(model, [read_part], config=config)
    try:
        events = [e async for e in agent.run_stream("read the parts")]
    finally:
        await agent.aclose()
        await model.aclose()
    done = events[-1]
    assert done.reason is CompletionReason.COMPLETED  # type: ignore[union-attr]
    sent = [tool_result_texts(r.body, provider) for r in server.requests]
    assert len(sent) == 5
    # request k holds the results of calls 0..k-1; a result seen by 2 responses is cleared
    assert [t.startswith(CLEARED_MARKER) for t in sent[2]] == [False, False]
    assert [t.startswith(CLEARED_MARKER) for t in sent[3]] == [True, False, False]
    assert [t.startswith(CLEARED_MARKER) for t in sent[4]] == [True, True, False, False]
    assert sent[4][0] == sent[3][0]  # sticky: the same stub on every later request
    stub = sent[3][0]
    assert "read_part" in stub and "call 1.0" in stub
    path = Path(stub.split("saved to ")[1].split(": read")[0])
    assert path.read_text(encoding="utf-8") == "part 0\n" + KOREAN * 5  # noqa: ASYNC240
    assert sent[4][3].startswith("part 3")  # the recent ones are whole
    boundaries = [e for e in events if isinstance(e, CompactBoundary)]
    assert [b.reason for b in boundaries] == ["micro_compaction"] * 2
    replaced = [e for e in events if isinstance(e, TranscriptReplaced)]
    assert (
        replaced and replaced[-1].messages[2].blocks[0].text == stub
    )  # the store's view
    assert not transcript_problems(done.messages)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"after_turns": None},
        {"after_turns": 0},
        {"after_seconds": -1.0},
        {"min_chars": -1},
    ],
)
def test_bad_micro_compaction_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        MicroCompaction(**kwargs)  # type: ignore[arg-type]


def test_micro_compaction_is_off_by_default() -> None:
    assert AgentConfig().micro_compaction is None


# -- the store keeps what was sent ----------------------------------------------------------


async def _recorded_run(
    agent: tw.Agent, prompt: str, tmp_path: Path
) -> tuple[SQLiteSessionStore, str, tw.RunResult]:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    sid = store.create_session(workspace=str(tmp_path), model="loopback", title="t").id
    recorder = SessionRecorder(store, sid, model="loopback")
    async with agent.open_run(prompt) as run:
        async for event in run.events():
            recorder.record(event)
    assert run.result is not None
    return store, sid, run.result


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_store_holds_the_stubs_and_a_resume_sends_them(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    for i in range(3):
        server.script(calls_reply(provider, [(f"call_{i}", "read_part", {"n": i})]))
    server.script(text_reply(provider, "done"), text_reply(provider, "again"))
    model = model_for(provider, server.url, window=200_000)
    config = AgentConfig(
        micro_compaction=MicroCompaction(after_turns=1, min_chars=0),
        results_dir=tmp_path / "results",
    )
    agent = tw.Agent(model, [read_part], config=config)
    try:
        store, sid, result = await _recorded_run(agent, "read", tmp_path)
        stored = store.messages(sid)
        assert stored == list(result.messages)  # the store mirrors the rewrite
        stubs = [
            r.text
            for m in stored
            for r in m.tool_results
            if r.text.startswith(CLEARED_MARKER)
        ]
        assert len(stubs) == 2  # calls 0 and 1; call 2's result was seen once only
        resumed = await agent.run("once more", history=stored)
    finally:
        await agent.aclose()
        await model.aclose()
    assert resumed.completion_reason is CompletionReason.COMPLETED
    last = tool_result_texts(server.requests[-1].body, provider)
    assert last[:2] == stubs  # the same bytes again after the resume


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_store_records_a_run_that_could_not_fit(
    provider: str, server: LoopbackServer, tmp_path: Path
) -> None:
    model = model_for(provider, server.url, window=2_048)
    agent = tw.Agent(model, [read_part], config=AgentConfig(max_output_tokens=256))
    try:
        store, sid, result = await _recorded_run(agent, KOREAN * 40, tmp_path)
    finally:
        await agent.aclose()
        await model.aclose()
    assert result.completion_reason is CompletionReason.CONTEXT_WINDOW_EXCEEDED
    assert server.requests == []
    (run,) = store.runs(sid)
    assert run.reason is CompletionReason.CONTEXT_WINDOW_EXCEEDED
    assert "not sent" in run.detail
