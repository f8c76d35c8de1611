"""`ToolRunner(before_start=...)`: the write-ahead seam a session recorder uses.

The barrier is awaited right before the tool's code would run: None lets it
start; a refusal, a failing barrier or a cancel while it waits answers the call
"not run" (synthetic), and the tool never ran. Through the runner alone; both
backends.
"""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from lifecycle_helpers import call, cut_when, make_state, registry_with

from toolweave.execution import StartBarrier, ToolRunner
from toolweave.messages import ToolCall
from toolweave.tools import tool

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool(name="effect")
async def effect(n: int) -> str:
    """Has a side effect."""
    ran.append(str(n))
    return f"ran {n}"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


def _runner(tmp_path: Path, barrier: StartBarrier) -> ToolRunner:
    return ToolRunner(
        registry_with(effect), state=make_state(tmp_path), before_start=barrier
    )


async def test_a_passed_barrier_starts_the_tool_after_it(tmp_path: Path) -> None:
    seen: list[tuple[str, list[str]]] = []

    async def barrier(c: ToolCall) -> str | None:
        seen.append((c.id, list(ran)))  # the tool has not run yet
        return None

    result = await _runner(tmp_path, barrier)(call("a", "effect", n=1))
    assert (result.text, result.is_error) == ("ran 1", False)
    assert seen == [("a", [])] and ran == ["1"]


async def test_a_refusal_answers_not_run_and_the_tool_never_runs(
    tmp_path: Path,
) -> None:
    async def barrier(c: ToolCall) -> str | None:
        return "the session's recording had ended, so it was never started"

    result = await _runner(tmp_path, barrier)(call("a", "effect", n=1))
    assert ran == []
    assert result.is_error and result.synthetic
    assert result.text == (
        "Not run: the session's recording had ended, so it was never started."
    )


async def test_a_failing_barrier_answers_not_run_naming_the_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def barrier(c: ToolCall) -> str | None:
        raise OSError("disk full")

    with caplog.at_level(logging.ERROR, logger="toolweave.execution"):
        result = await _runner(tmp_path, barrier)(call("a", "effect", n=1))
    assert ran == []
    assert result.is_error and result.synthetic
    assert result.text == (
        "Not run: its start could not be recorded (OSError('disk full')),"
        " so it never started."
    )
    assert "the start barrier of call a failed" in caplog.text


async def test_a_cancel_while_the_start_is_recorded_answers_not_run(
    tmp_path: Path,
) -> None:
    waiting = anyio.Event()

    async def barrier(c: ToolCall) -> str | None:
        waiting.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = _runner(tmp_path, barrier)
    result = await cut_when(runner, call("a", "effect", n=1), waiting)
    assert ran == []
    assert result.is_error and result.synthetic
    assert result.text == (
        "Not run: interrupted while its start was being recorded; the tool 'effect'"
        " never started, so it had no effect."
    )
