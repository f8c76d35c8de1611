"""The stalled-iteration guard and the repeat-failure watcher."""

from __future__ import annotations

import pytest
from loop_support import (
    assert_provider_valid,
    call,
    config,
    run_collect,
    say,
    scripted,
    use,
)

from toolweave.events import CompletionReason, ToolResultReady
from toolweave.loop import Agent, RepeatFailureWatcher, StalledIterationGuard
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import tool


def err(call_id: str, text: str = "boom") -> ToolResult:
    return ToolResult(call_id, text, is_error=True)


def test_stall_guard_counts_only_all_error_iterations() -> None:
    guard = StalledIterationGuard(3)
    assert guard.record([err("a")], truncated=False) is None
    assert guard.record([err("b"), ToolResult("c", "fine")], truncated=False) is None
    assert guard.streak == 0
    assert guard.record([err("d")], truncated=False) is None
    assert guard.record([err("e")], truncated=True) is None
    detail = guard.record([err("f")], truncated=False)
    assert detail is not None and "3 consecutive" in detail
    assert "truncated" not in detail


def test_stall_guard_ignores_cancelled_iterations() -> None:
    guard = StalledIterationGuard(2)
    assert guard.record([err("a")], truncated=False) is None
    assert guard.record([err("b")], truncated=False, cancelled=True) is None
    assert guard.streak == 1
    assert guard.record([], truncated=False) is None
    assert guard.streak == 1


def test_stall_guard_names_truncations() -> None:
    guard = StalledIterationGuard(2)
    guard.record([err("a")], truncated=True)
    detail = guard.record([err("b")], truncated=True)
    assert detail is not None and "truncated at max_tokens" in detail


def test_watcher_refuses_the_fourth_identical_failure() -> None:
    watcher = RepeatFailureWatcher(3)
    same = ToolCall("x", "grep", {"pattern": "a", "path": "/"})
    reordered = ToolCall("y", "grep", {"path": "/", "pattern": "a"})
    for _ in range(3):
        assert watcher.refusal(same) is None
        watcher.observe(same, err("x", "no such file"))
    refused = watcher.refusal(reordered)  # same arguments, other key order and id
    assert refused is not None and refused.is_error and refused.call_id == "y"
    assert "failed 3 times" in refused.text and "no such file" in refused.text
    assert watcher.refusal(ToolCall("z", "grep", {"pattern": "b", "path": "/"})) is None


def test_watcher_resets_on_success_or_a_different_error() -> None:
    watcher = RepeatFailureWatcher(2)
    c = ToolCall("x", "t", {"a": 1})
    watcher.observe(c, err("x", "one"))
    watcher.observe(c, err("x", "two"))  # a different way of failing restarts the count
    assert watcher.refusal(c) is None
    watcher.observe(c, err("x", "two"))
    assert watcher.refusal(c) is not None
    watcher.observe(c, ToolResult("x", "ok"))
    assert watcher.refusal(c) is None
    watcher.observe(c, ToolResult("x", "gone", is_error=True, synthetic=True))
    watcher.observe(c, ToolResult("x", "gone", is_error=True, synthetic=True))
    assert (
        watcher.refusal(c) is None
    )  # calls that never ran are not the tool's failures


@pytest.mark.anyio
async def test_watcher_in_the_loop_stops_running_a_hopeless_call() -> None:
    attempts: list[str] = []

    @tool
    async def deploy(target: str) -> str:
        """Always fails the same way."""
        attempts.append(target)
        raise RuntimeError("permission denied")

    same = [use(call(f"d{i}", "deploy", target="prod")) for i in range(4)]
    model = scripted(
        *same[:2],
        use(call("ok", "deploy", target="staging")),
        *same[2:],
        say("stopping"),
    )
    agent = Agent(model, [deploy], config=config(stall_limit=10))
    result, events = await run_collect(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    assert attempts == [
        "prod",
        "prod",
        "staging",
        "prod",
    ]  # the fourth "prod" was refused
    refused = [
        e.result
        for e in events
        if isinstance(e, ToolResultReady) and e.result.call_id == "d3"
    ]
    assert "Refused" in refused[0].text and "permission denied" in refused[0].text
    assert_provider_valid(result.messages)
