"""A local OpenAI-compatible server works with no flags (issue 27, item 3).

Against the real llama-cpp-python server on SmolLM2-135M (see
test_llama_server.py for what these tests assert and why: structure, never
meaning). llama-cpp-python rejects an assistant turn that only called tools
when it is sent with ``content: null`` (HTTP 500 "Input should be a valid
string"), so every row here reaches a second model call after a tool call:
that is the turn that failed before.

Rows: the library with no key, no ``compatible=`` and a local model name (taken
for a compatible server from the URL); a model named like OpenAI's at the
local URL (taken for OpenAI behind a gateway: the refusal is detected and the
request re-sent with "" once, with one warning); the CLI's ``openai:`` spec
with ``--base-url`` and no key, then ``resume`` with no ``--base-url`` (the
session remembers it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_llama_server import HONEST_ENDINGS, add, assert_paired, get_time

import toolweave as tw
from toolweave.events import Event, ModelCallStarted
from toolweave.events import Warning as WarningEvent
from toolweave.models import OpenAIChatModel

pytestmark = [
    pytest.mark.llama,
    pytest.mark.anyio,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

SYSTEM = "You are a helpful assistant. Always use the tools to answer."
PROMPT = "Use the add tool to add 2 and 3."
NULL_REFUSED = "rejected an assistant turn that only called tools"


@pytest.fixture
def anyio_backend() -> str:
    """asyncio on the real clock, as in test_llama_server.py."""
    return "asyncio"


@pytest.fixture
def no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newcomer's shell: no key, no base URL in the environment."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID"):
        monkeypatch.delenv(name, raising=False)


async def _run(model: OpenAIChatModel) -> tuple[tw.RunResult, list[Event]]:
    agent = tw.Agent(
        model,
        [add, get_time],
        system=SYSTEM,
        config=tw.AgentConfig(max_iterations=3, max_output_tokens=64, temperature=0.0),
    )
    try:
        async with agent.open_run(PROMPT) as run:
            result = await run.wait()
            events = [event async for event in run.events()]
    finally:
        await model.aclose()
    return result, events


def _assert_second_turn_answered(result: tw.RunResult, events: list[Event]) -> None:
    """A tool was called and the model was asked again after its result: no ERROR."""
    assert result.completion_reason in HONEST_ENDINGS, result
    assert assert_paired(result.messages) >= 1
    assert sum(isinstance(e, ModelCallStarted) for e in events) >= 2
    tool_only_turns = [
        m for m in result.messages if m.role == "assistant" and m.tool_calls
    ]
    assert tool_only_turns, result.messages


@pytest.mark.usefixtures("no_openai_environment")
async def test_a_local_server_with_no_key_and_no_flags_runs_past_its_second_turn(
    llama_url: str,
) -> None:
    warnings: list[WarningEvent] = []
    model = OpenAIChatModel("local", base_url=llama_url, on_warning=warnings.append)
    assert model.compatible  # decided from the URL and the name
    result, events = await _run(model)
    _assert_second_turn_answered(result, events)
    # compatible from the start: content "" was sent, nothing was refused for it
    assert not [w for w in warnings if NULL_REFUSED in w.message]


@pytest.mark.usefixtures("no_openai_environment")
async def test_an_openai_name_at_a_local_server_learns_empty_content_once(
    llama_url: str,
) -> None:
    """Taken for OpenAI behind a gateway, the model sends null, is refused, re-sends ""."""
    warnings: list[WarningEvent] = []
    model = OpenAIChatModel(
        "gpt-4o-mini",
        "not-needed",
        llama_url,
        max_tokens_field="max_tokens",
        on_warning=warnings.append,
    )
    assert not model.compatible
    result, events = await _run(model)
    _assert_second_turn_answered(result, events)
    refused = [w.message for w in warnings if NULL_REFUSED in w.message]
    assert len(refused) == 1, [w.message for w in warnings]
    assert "compatible=True" in refused[0]


def _toolweave(
    args: list[str], cwd: Path, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    toolweave = Path(sys.executable).parent / "toolweave"
    done = subprocess.run(
        [str(toolweave), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        stdin=subprocess.DEVNULL,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert lines, f"no output; stderr:\n{done.stderr[-2000:]}"
    return done, lines


@pytest.mark.timeout(900)
def test_the_cli_with_an_openai_spec_and_a_local_url_needs_no_key_and_resume_remembers_the_url(
    llama_url: str, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "toolweave.toml").write_text(  # one model call per run
        "[budgets]\nmax_iterations = 1\n", encoding="utf-8"
    )
    db = tmp_path / "sessions.db"
    env = os.environ | {"TOOLWEAVE_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    for name in ("TOOLWEAVE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    common = ["--store", str(db), "--json", "--permission-mode", "accept_edits"]
    run = ["run", "Say hello.", "--model", "openai:local", "--base-url", llama_url]
    done, lines = _toolweave([*run, *common], work, env)
    first = lines[-1]
    assert first["type"] == "RunFinished", (first, done.stderr[-2000:])
    assert first["reason"] in ("completed", "max_iterations"), done.stderr[-2000:]
    session_id = lines[0]["session_id"]
    # resume with no --base-url and no model: the session's own are used
    done, lines = _toolweave(
        ["resume", session_id, "Say it again.", *common], work, env
    )
    last = lines[-1]
    assert last["type"] == "RunFinished", (last, done.stderr[-2000:])
    assert last["reason"] in ("completed", "max_iterations"), done.stderr[-2000:]
    kinds = [line["type"] for line in lines]
    assert "ModelCallFinished" in kinds
