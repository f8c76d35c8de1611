"""RunStart shell hooks from toolweave.toml (Claude Code's SessionStart; issue 13 item 11c)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import final, json_lines, script
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.loop import (
    Agent,
    AgentConfig,
    HookCommand,
    HookSettings,
    build_shell_hooks,
)
from toolweave.messages import Message, ModelResponse, Text
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.sessions import SQLiteSessionStore

pytestmark = pytest.mark.anyio


async def _first_message(tmp_path: Path, command: str, warned: list[str]) -> Message:
    seen: list[Message] = []

    def answer(request: ModelRequest) -> ModelResponse:
        seen.extend(request.messages)
        return ModelResponse([Text("ok")])

    settings = HookSettings(RunStart=(HookCommand(command=command),))
    hooks = build_shell_hooks(
        settings, cwd=tmp_path, session_id="s-1", warn=warned.append
    )
    agent = Agent(ScriptedModel([answer]), config=AgentConfig(hooks=hooks))
    await agent.run("go")
    return seen[0]


@pytest.mark.parametrize(
    ("command", "context"),
    [
        ("cat > payload.json; echo 'branch: main'", "branch: main"),
        (
            'cat > payload.json; echo \'{"hookSpecificOutput": '
            '{"hookEventName": "RunStart", "additionalContext": "from json"}}\'',
            "from json",
        ),
    ],
    ids=["plain-stdout", "json"],
)
async def test_the_hooks_output_reaches_the_first_message(
    tmp_path: Path, command: str, context: str
) -> None:
    warned: list[str] = []
    first = await _first_message(tmp_path, command, warned)
    assert first.blocks[0] == Text(f"<system-reminder>\n{context}\n</system-reminder>")
    assert first.blocks[-1] == Text("go") and warned == []
    payload = json.loads((tmp_path / "payload.json").read_text())
    assert payload["hook_event_name"] == "RunStart"
    assert (payload["prompt"], payload["source"], payload["session_id"]) == (
        "go",
        "startup",
        "s-1",
    )


@pytest.mark.parametrize(
    ("command", "warning"),
    [("echo nope >&2; exit 2", "nope"), ("exit 7", "status 7")],
    ids=["exit-2", "exit-7"],
)
async def test_a_failing_hook_adds_nothing_and_warns(
    tmp_path: Path, command: str, warning: str
) -> None:
    warned: list[str] = []
    first = await _first_message(tmp_path, command, warned)
    assert first == Message("user", "go")
    assert len(warned) == 1 and warning in warned[0]


def test_toolweave_toml_run_start_hook_feeds_a_cli_run(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "toolweave.toml").write_text(
        '[[hooks.RunStart]]\ncommand = "echo project rules: be brief"\n'
    )
    steps = script(tmp_path / "s.json", final("done"))
    db = tmp_path / "sessions.db"
    result = CliRunner().invoke(
        app, ["run", "hi", "--scripted", str(steps), "--json", "--store", str(db)]
    )
    assert result.exit_code == 0, result.output
    sid = json_lines(result.stdout)[0]["session_id"]
    store = SQLiteSessionStore(db)
    first = store.messages(sid)[0]
    store.close()
    assert first.blocks[0] == Text(
        "<system-reminder>\nproject rules: be brief\n</system-reminder>"
    )
