"""`ToolRunner(deadline=...)`: the run's wall-clock bound, seen through the runner alone.

A call that reaches the runner after the bound fell never starts ("not run");
a tool still running when it falls is cut as at its timeout ("effects
unknown"; a worker thread abandoned is named); the steps after a finished tool
get the grace and no more, and a cut there withholds nothing it should not
(the tool's own error stays its answer). A cut that came from elsewhere (the
caller cancelled the call in its PreToolUse hooks) keeps its own wording.
Both backends; trio on virtual time.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from lifecycle_helpers import call, cut_when, make_state, registry_with

from toolweave import ToolError
from toolweave.execution import (
    Hooks,
    PostToolUseInput,
    PreToolUseInput,
    RunDeadline,
    ToolRunner,
)
from toolweave.messages import ToolResult
from toolweave.tools import tool

pytestmark = pytest.mark.anyio

BOUND = "the run's wall-clock budget (1 s)"
ran: list[str] = []
released = threading.Event()


@tool(name="sleeper")
async def sleeper() -> str:
    """Sleeps until stopped."""
    ran.append("sleeper")
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@tool(name="quick")
async def quick(fail: bool = False) -> str:
    """Answers at once (or fails)."""
    ran.append("quick")
    if fail:
        raise ToolError("quick failed on purpose")
    return "quick ran"


@tool(name="blocking")
def blocking() -> str:
    """A sync tool stuck until the test releases it."""
    ran.append("blocking")
    released.wait(30)
    return "released"


@pytest.fixture(autouse=True)
def _fresh() -> object:
    ran.clear()
    released.clear()
    yield
    released.set()  # an abandoned worker thread finishes


def _deadline(seconds: float, grace: float = 0.2) -> RunDeadline:
    return RunDeadline(at=anyio.current_time() + seconds, what=BOUND, grace=grace)


def _runner(
    tmp_path: Path, deadline: RunDeadline, hooks: Hooks | None = None
) -> ToolRunner:
    return ToolRunner(
        registry_with(sleeper, quick, blocking),
        state=make_state(tmp_path),
        hooks=hooks,
        deadline=deadline,
    )


def _not_run(result: ToolResult, name: str) -> bool:
    return (
        result.is_error
        and result.synthetic
        and result.text
        == f"Not run: {BOUND} ran out before the call to {name!r} could start."
        f" The tool {name!r} was never started."
    )


async def test_a_call_arriving_after_the_bound_fell_never_starts(
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, _deadline(-1.0))
    result = await runner(call("a", "quick"))
    assert _not_run(result, "quick")
    assert ran == []


async def test_a_tool_running_when_the_bound_falls_is_cut_effects_unknown(
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, _deadline(0.2))
    result = await runner(call("a", "sleeper"))
    assert ran == ["sleeper"]
    assert result.is_error and not result.synthetic
    assert result.text.startswith(
        f"Timed out: {BOUND} ran out while the tool 'sleeper' ran (after "
    )
    assert "any effects it had are unknown" in result.text
    assert "worker thread" not in result.text


async def test_a_sync_tool_cut_by_the_bound_names_its_abandoned_thread(
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, _deadline(0.2))
    result = await runner(call("a", "blocking"))
    assert ran == ["blocking"]
    assert result.is_error
    assert "any effects it had are unknown" in result.text
    assert "the thread was abandoned and may still finish its work" in result.text


async def test_a_tool_that_ends_before_the_bound_keeps_its_answer(
    tmp_path: Path,
) -> None:
    runner = _runner(tmp_path, _deadline(30.0))
    result = await runner(call("a", "quick"))
    assert (result.text, result.is_error) == ("quick ran", False)


async def test_post_hooks_past_the_grace_withhold_the_output_fail_closed(
    tmp_path: Path,
) -> None:
    hooks = Hooks(timeout=None)

    @hooks.post_tool_use("quick")
    async def hang(data: PostToolUseInput) -> None:
        await anyio.sleep_forever()

    runner = _runner(tmp_path, _deadline(0.1, grace=0.1), hooks)
    result = await runner(call("a", "quick"))
    assert ran == ["quick"]
    assert result.is_error
    assert result.text.startswith(
        "Interrupted after the tool 'quick' finished, while its PostToolUse hooks ran:"
        " its effects happened"
    )


async def test_a_tool_error_cut_in_its_failure_hooks_stays_the_tools_error(
    tmp_path: Path,
) -> None:
    hooks = Hooks(timeout=None)

    @hooks.post_tool_use_failure("quick")
    async def hang(data: object) -> None:
        await anyio.sleep_forever()

    runner = _runner(tmp_path, _deadline(0.1, grace=0.1), hooks)
    result = await runner(call("a", "quick", fail=True))
    assert ran == ["quick"]
    assert result.is_error
    assert "quick failed on purpose" in result.text


async def test_a_cancel_in_pre_hooks_under_a_far_bound_keeps_its_own_answer(
    tmp_path: Path,
) -> None:
    hooks = Hooks(timeout=None)
    entered = anyio.Event()

    @hooks.pre_tool_use("quick")
    async def hang(data: PreToolUseInput) -> None:
        entered.set()
        await anyio.sleep_forever()

    runner = _runner(tmp_path, _deadline(3600.0), hooks)
    result = await cut_when(runner, call("a", "quick"), entered)
    assert ran == []
    assert result.is_error and result.synthetic
    assert result.text == (  # the caller's cut, not the deadline's
        "Stopped while its PreToolUse hooks ran: the tool 'quick' never started,"
        " so it had no effect."
    )
