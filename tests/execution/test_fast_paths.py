"""The lifecycle's fast paths answer exactly what the full stages would.

The runner skips a stage when it cannot change the outcome (no permission
opinion possible, no timeout, a plain str output); each stage still answers
the same when called on its own, which is what these check.
"""

from __future__ import annotations

import pytest

import toolweave as tw
from toolweave.execution import PermissionMode, PermissionRules
from toolweave.execution._authorize import PermissionGate
from toolweave.execution._execute import execute
from toolweave.execution._output import to_content
from toolweave.tools import SessionState, ToolContext

pytestmark = pytest.mark.anyio


@tw.tool
async def echo(text: str) -> str:
    """Echo."""
    return text


def _call(text: str = "hi") -> tw.ToolCall:
    return tw.ToolCall("c1", "echo", {"text": text})


async def test_the_permission_stage_allows_what_the_runner_lets_through_at_once() -> (
    None
):
    gate = PermissionGate(None, PermissionMode.DEFAULT, None, SessionState())
    assert gate.allows_at_once(echo, None)
    call = _call()
    await gate.authorize(echo, call, {"text": "hi"}, ToolContext(call), None)


def test_rules_or_another_mode_take_the_full_permission_stage() -> None:
    state = SessionState()
    ruled = PermissionGate(
        PermissionRules(deny=["echo"]), PermissionMode.DEFAULT, None, state
    )
    assert not ruled.allows_at_once(echo, None)
    planned = PermissionGate(None, PermissionMode.PLAN, None, state)
    assert not planned.allows_at_once(echo, None)


async def test_execute_without_a_limit_runs_the_tool_as_the_runner_does() -> None:
    call = _call("back")
    executed = await execute(echo, {"text": "back"}, ToolContext(call), None)
    assert executed.output == "back"
    assert executed.error is None


def test_a_str_output_maps_to_itself() -> None:
    assert to_content("text") == ("text", False)
    assert to_content("") == ("", False)
