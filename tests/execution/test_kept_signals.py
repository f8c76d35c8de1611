"""What hooks said in a batch that suspended is kept, and given back on resume (issue 29 item 1).

`ToolRunner.keep_signals` returns the batch's context and stop requests as
said (and resets); `restore_signals` collects them again, so the resumed
batch's `take_signals` is what an uninterrupted batch's would have been:
the restored entries and the new ones, in call order.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import toolweave as tw
from toolweave.execution import (
    Hooks,
    PostToolUseDecision,
    PostToolUseInput,
    ToolRunner,
)
from toolweave.tools import SessionState

pytestmark = pytest.mark.anyio


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
async def note(tag: str) -> str:
    """Says its tag."""
    return tag


def _runner(tmp: Path) -> ToolRunner:
    hooks = Hooks()

    @hooks.post_tool_use("note")
    def after(data: PostToolUseInput) -> PostToolUseDecision:
        tag = str(data.input["tag"])
        return PostToolUseDecision(
            additional_context=f"context {tag}",
            prevent_continuation=tag == "stop",
            stop_reason=f"stopped by {tag}",
        )

    return ToolRunner(
        tw.ToolRegistry([note]), state=SessionState(workspace=tmp), hooks=hooks
    )


def _call(key: str, tag: str) -> tw.ToolCall:
    return tw.ToolCall(key, "note", {"tag": tag})


async def test_kept_signals_come_back_in_call_order(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    calls = [_call("k0", "a"), _call("k1", "stop"), _call("k2", "c")]
    # ran before the suspension, out of call order
    done = {2: await runner(calls[2]), 1: await runner(calls[1])}
    kept = runner.keep_signals()
    assert kept == (
        ("context", "k2", "context c"),
        ("context", "k1", "context stop"),
        ("stop", "k1", "stopped by stop"),
    )
    assert runner.take_signals() == type(runner.take_signals())()  # reset: nothing left

    resumed = _runner(tmp_path)  # a new run's runner
    resumed.restore_signals(kept)
    results = [await resumed(calls[0]), done[1], done[2]]
    resumed.finish_batch(results, calls)
    signals = resumed.take_signals()
    assert signals.additional_context == ("context a", "context stop", "context c")
    assert signals.stop and signals.reason == "stopped by stop"
