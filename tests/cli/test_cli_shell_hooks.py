"""Shell hooks from settings: real commands reading the hook input as JSON on stdin."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from toolweave.loop import (
    Agent,
    AgentConfig,
    HookCommand,
    HookSettings,
    RunResult,
    build_shell_hooks,
)
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.tools import Access, tool

pytestmark = pytest.mark.anyio

ran: Counter[str] = Counter()


@tool(access=lambda a: Access(writes=[f"k:{a['key']}"]))
async def touch(key: str, note: str = "") -> str:
    """Change a key."""
    ran[key] += 1
    return f"touched {key}{note}"


def _use(key: str) -> ModelResponse:
    return ModelResponse(
        [ToolCall("c1", "touch", {"key": key})], StopReason.TOOL_USE, Usage(1, 1)
    )


def _say(text: str) -> ModelResponse:
    return ModelResponse([Text(text)], StopReason.END_TURN, Usage(1, 1))


async def _run(
    tmp_path: Path, hooks: HookSettings, script: list[ModelResponse]
) -> tuple[RunResult, ScriptedModel]:
    ran.clear()
    model = ScriptedModel(script)
    built = build_shell_hooks(hooks, cwd=tmp_path, session_id="s-123")
    assert built is not None
    agent = Agent(model, [touch], config=AgentConfig(hooks=built, workspace=tmp_path))
    return await agent.run("go"), model


def _result_text(result: RunResult) -> str:
    (answer,) = result.messages[2].tool_results
    return answer.text


async def test_exit_2_denies_the_call_and_the_hook_sees_the_input_as_json(
    tmp_path: Path,
) -> None:
    hook = HookCommand(
        command='cat > payload.json; echo "not on main" >&2; exit 2', matcher="touch"
    )
    result, _ = await _run(
        tmp_path, HookSettings(PreToolUse=(hook,)), [_use("a"), _say("ok")]
    )
    assert "not on main" in _result_text(result)
    assert ran["a"] == 0
    payload = json.loads((tmp_path / "payload.json").read_text())
    assert payload == {
        "hook_event_name": "PreToolUse",
        "session_id": "s-123",
        "cwd": str(tmp_path),
        "tool_name": "touch",
        "tool_input": {"key": "a", "note": ""},  # the validated input
        "tool_use_id": "c1",
    }


async def test_a_json_decision_and_an_input_rewrite(tmp_path: Path) -> None:
    deny = HookCommand(
        command="""echo '{"hookSpecificOutput": {"permissionDecision": "deny",
        "permissionDecisionReason": "json says no"}}'""",
        matcher="touch",
    )
    result, _ = await _run(
        tmp_path, HookSettings(PreToolUse=(deny,)), [_use("a"), _say("ok")]
    )
    assert "json says no" in _result_text(result) and ran["a"] == 0
    rewrite = HookCommand(
        command="""echo '{"hookSpecificOutput": {"updatedInput": {"key": "a", "note": "!"}}}'"""
    )
    result, _ = await _run(
        tmp_path, HookSettings(PreToolUse=(rewrite,)), [_use("a"), _say("ok")]
    )
    assert _result_text(result) == "touched a!" and ran == {"a": 1}


async def test_a_matcher_that_does_not_match_leaves_the_call_alone(
    tmp_path: Path,
) -> None:
    hook = HookCommand(command="exit 2", matcher="bash")
    result, _ = await _run(
        tmp_path, HookSettings(PreToolUse=(hook,)), [_use("a"), _say("ok")]
    )
    assert _result_text(result) == "touched a"


@pytest.mark.parametrize(
    ("command", "limit", "problem"),
    [
        ("echo broken >&2; exit 1", 30.0, "exited with status 1: broken"),
        ("sleep 20", 0.3, "TimeoutError"),
    ],
)
async def test_a_failing_pre_hook_fails_the_call_closed(
    tmp_path: Path, command: str, limit: float, problem: str
) -> None:
    hook = HookCommand(command=command, timeout=limit)
    result, _ = await _run(
        tmp_path, HookSettings(PreToolUse=(hook,)), [_use("a"), _say("ok")]
    )
    assert problem in _result_text(result)
    assert ran["a"] == 0


async def test_post_hook_context_reaches_the_model(tmp_path: Path) -> None:
    hook = HookCommand(command='echo "remember to run the tests" >&2; exit 2')
    result, model = await _run(
        tmp_path, HookSettings(PostToolUse=(hook,)), [_use("a"), _say("ok")]
    )
    assert ran["a"] == 1 and result.ok
    second = model.requests[1].messages[-1]
    assert any(
        "remember to run the tests" in getattr(b, "text", "") for b in second.blocks
    )


async def test_a_stop_hook_can_make_the_model_continue_once(tmp_path: Path) -> None:
    hook = HookCommand(
        command='[ -f once ] && exit 0; touch once; echo "also update docs" >&2; exit 2'
    )
    result, model = await _run(
        tmp_path, HookSettings(Stop=(hook,)), [_say("first"), _say("second")]
    )
    assert result.output == "second"
    model.assert_complete()
    assert "also update docs" in model.requests[1].messages[-1].text


def test_no_commands_means_no_hooks(tmp_path: Path) -> None:
    assert build_shell_hooks(HookSettings(), cwd=tmp_path, session_id="s") is None
