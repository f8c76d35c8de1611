"""toolweave against a real model server: llama-cpp-python on SmolLM2-135M-Instruct.

The model is tiny and slow on two cores, and what it says is not ours to
judge: these tests assert structure only (the refusal learned once, calls
paired with results in order, an honest ending, the events and the stored
session), never meaning. Every run is bounded by ``max_iterations`` and a
small ``max_output_tokens``. Greedy decoding (temperature 0) makes the Agent
run repeatable on one build.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolweave as tw
from toolweave.events import (
    Event,
    ModelCallFinished,
    ModelCallStarted,
    RunFinished,
    ToolResultReady,
    ToolUseStarted,
)
from toolweave.events import Warning as WarningEvent
from toolweave.models import OpenAIChatModel
from toolweave.sessions import SQLiteSessionStore

pytestmark = [
    pytest.mark.llama,
    pytest.mark.anyio,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

HONEST_ENDINGS = (tw.CompletionReason.COMPLETED, tw.CompletionReason.MAX_ITERATIONS)


@pytest.fixture
def anyio_backend() -> str:
    """asyncio on the real clock: the SDK waits on a real server (trio's MockClock
    would fire its timeouts at once); one backend keeps the slow model's bill down."""
    return "asyncio"


@tw.tool(concurrency=tw.Concurrency.SAFE)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@tw.tool(concurrency=tw.Concurrency.SAFE)
def get_time(city: str) -> str:
    """The current time in a city."""
    return f"12:00 in {city}"


def assert_paired(messages: list[tw.Message] | tuple[tw.Message, ...]) -> int:
    """Every call is answered by exactly one result, in call order, in the next message."""
    pending: list[str] = []
    seen = 0
    for message in messages:
        results = [r.call_id for r in message.tool_results]
        assert results == pending, f"calls {pending} answered by {results}"
        pending = [c.id for c in message.tool_calls]
        seen += len(pending)
        assert len(set(pending)) == len(pending)
    assert pending == [], f"calls {pending} were never answered"
    return seen


async def test_an_agent_with_two_tools_reaches_an_honest_ending(llama_url: str) -> None:
    """Streaming is refused on the first tool call, learned once; the run goes on whole."""
    model = OpenAIChatModel("local", "not-needed", llama_url, compatible=True)
    agent = tw.Agent(
        model,
        [add, get_time],
        system="You are a helpful assistant. Always use the tools to answer.",
        config=tw.AgentConfig(max_iterations=3, max_output_tokens=64, temperature=0.0),
    )
    events: list[Event] = []
    try:
        async with agent.open_run("Use the add tool to add 2 and 3.") as run:
            result = await run.wait()
            events = [event async for event in run.events()]
        learned = model.capabilities
    finally:
        await model.aclose()
    assert result.completion_reason in HONEST_ENDINGS, result
    calls = assert_paired(result.messages)
    assert calls >= 1  # greedy SmolLM2 calls `add` when told to use the tools
    # the refusal, learned once; the model is asked whole from then on
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    refusals = [m for m in warnings if "refused to stream" in m]
    assert len(refusals) == 1, warnings
    assert learned.streams_with_tools is False and learned.streams_without_tools
    # events: one started/finished pair per model call, a start and a result per call
    started = [e for e in events if isinstance(e, ModelCallStarted)]
    finished = [e for e in events if isinstance(e, ModelCallFinished)]
    assert len(started) == len(finished) >= 1
    uses = [e.call.id for e in events if isinstance(e, ToolUseStarted)]
    answered = [e.result.call_id for e in events if isinstance(e, ToolResultReady)]
    assert sorted(uses) == sorted(answered) and len(uses) == calls
    assert not any(e.result.synthetic for e in events if isinstance(e, ToolResultReady))
    assert (
        isinstance(events[-1], RunFinished)
        and events[-1].reason is result.completion_reason
    )


async def test_stream_false_never_asks_for_a_stream(llama_url: str) -> None:
    """A model built with stream=False: no refusal to meet, so no warning."""
    warnings: list[WarningEvent] = []
    model = OpenAIChatModel(
        "local",
        "not-needed",
        llama_url,
        compatible=True,
        stream=False,
        on_warning=warnings.append,
    )
    agent = tw.Agent(
        model,
        [add, get_time],
        system="You are a helpful assistant. Always use the tools to answer.",
        config=tw.AgentConfig(max_iterations=2, max_output_tokens=64, temperature=0.0),
    )
    try:
        result = await agent.run("Use the add tool to add 2 and 3.")
    finally:
        await model.aclose()
    assert result.completion_reason in HONEST_ENDINGS, result
    assert assert_paired(result.messages) >= 1
    assert not [w for w in warnings if "refused to stream" in w.message]


def _git_repo(root: Path) -> None:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "notes.txt").write_text("hello from a scratch repository\n")
    (root / "toolweave.toml").write_text(
        "[budgets]\nmax_iterations = 2\n", encoding="utf-8"
    )


def test_toolweave_run_against_the_server_in_a_scratch_repository(
    llama_url: str, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    _git_repo(repo)
    db = tmp_path / "sessions.db"
    toolweave = Path(sys.executable).parent / "toolweave"
    env = os.environ | {"TOOLWEAVE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    env.pop("TOOLWEAVE_MODEL", None)
    done = subprocess.run(
        [
            str(toolweave),
            "run",
            "Read notes.txt.",
            "--model",
            "openai-compatible:local",
            "--base-url",
            llama_url,
            "--store",
            str(db),
            "--json",
            "--permission-mode",
            "accept_edits",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        stdin=subprocess.DEVNULL,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert lines, f"no output; stderr:\n{done.stderr[-2000:]}"
    last: dict[str, Any] = lines[-1]
    assert last["type"] == "RunFinished", last
    assert last["reason"] in ("completed", "max_iterations"), (
        last,
        done.stderr[-2000:],
    )
    # the CLI's contract: 0 only for a completed run, 1 for a budget stop
    assert done.returncode == (0 if last["reason"] == "completed" else 1), done.stderr
    kinds = [line["type"] for line in lines]
    assert kinds.count("ModelCallStarted") == kinds.count("ModelCallFinished") >= 1
    refusals = [
        line
        for line in lines
        if line["type"] == "Warning" and "refused to stream" in line["message"]
    ]
    assert len(refusals) <= 1  # the refusal, if the model called a tool
    store = SQLiteSessionStore(db)
    try:
        session_id = lines[0]["session_id"]
        stored = store.messages(session_id)
        assert stored and stored[0].role == "user"
        calls = assert_paired(stored)
        records = store.calls(session_id)
        assert len(records) == calls
        assert all(r.state is tw.sessions.CallState.FINISHED for r in records)  # type: ignore[attr-defined]
    finally:
        store.close()
