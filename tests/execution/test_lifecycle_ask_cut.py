"""A wait for permission cut by the run's halt or by cancellation: the call never started.

`ToolRunner(interrupt=token)`: once the token is set, the ask handler's wait
ends, calls queued behind it are not asked, and each is answered "not run"
(synthetic), never "effects unknown". Through the runner; both backends.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from lifecycle_helpers import Approvals, call, cut_when

from toolweave.execution import (
    AskAnswer,
    RunDeadline,
)
from toolweave.messages import ToolCall, ToolResult
from toolweave.scheduling import InterruptToken

pytestmark = pytest.mark.anyio


def _not_run(result: ToolResult) -> bool:
    return (
        result.is_error
        and result.synthetic
        and result.text.startswith("Not run: the run was stopped while this call")
        and "never started" in result.text
    )


async def test_the_halt_ends_the_ask_and_the_queue_behind_it(
    approvals: Approvals, tmp_path: Path
) -> None:
    halt = InterruptToken()
    asked: list[str] = []
    asking = anyio.Event()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        asked.append(call.id)
        asking.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = approvals.runner(tmp_path, ask, halt=halt)
    results: dict[str, ToolResult] = {}

    async def one(call_id: str) -> None:
        results[call_id] = await runner(call(call_id, "guarded", n=1))

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, "a")
        tg.start_soon(one, "b")
        await asking.wait()
        await anyio.wait_all_tasks_blocked()  # the other one waits for its turn
        halt.set()
    assert len(asked) == 1 and approvals.ran == []
    assert all(_not_run(results[c]) for c in ("a", "b")), results


async def test_after_the_halt_nothing_is_asked(
    approvals: Approvals, tmp_path: Path
) -> None:
    halt = InterruptToken()
    halt.set()
    asked: list[str] = []

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        asked.append(call.id)
        return "allow"

    result = await approvals.runner(tmp_path, ask, halt=halt)(call("a", "guarded", n=1))
    assert asked == [] and approvals.ran == [] and _not_run(result)


async def test_a_halt_during_an_answer_still_wins(
    approvals: Approvals, tmp_path: Path
) -> None:
    """The halt fires as the answer comes back (no checkpoint between): not run."""
    halt = InterruptToken()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        halt.set()
        return "allow"

    result = await approvals.runner(tmp_path, ask, halt=halt)(call("a", "guarded", n=1))
    assert approvals.ran == [] and _not_run(result)


async def test_a_call_cancelled_at_its_prompt_is_answered_not_run(
    approvals: Approvals,
    tmp_path: Path,
) -> None:
    """No halt token (a runner used alone): cancelling the call ends the wait the same way."""
    asking = anyio.Event()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        asking.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = approvals.runner(tmp_path, ask, halt=None)
    result = await cut_when(runner, call("a", "guarded", n=1), asking)
    assert approvals.ran == [] and _not_run(result)


async def test_an_answer_before_the_halt_lets_the_call_run(
    approvals: Approvals, tmp_path: Path
) -> None:
    halt = InterruptToken()

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        return "allow"

    result = await approvals.runner(tmp_path, ask, halt=halt)(call("a", "guarded", n=1))
    assert result.text == "ran" and approvals.ran == [1]
    halt.set()  # afterwards: nothing to cut


async def test_the_run_deadline_at_the_prompt_says_so(
    approvals: Approvals, tmp_path: Path
) -> None:
    """The wall-clock bound falls while the user is asked: "not run", naming the bound."""

    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    runner = approvals.runner(
        tmp_path,
        ask,
        deadline=RunDeadline(anyio.current_time() + 0.05, "the test's bound"),
        halt=InterruptToken(),
    )
    result = await runner(call("a", "guarded", n=1))
    assert approvals.ran == [] and result.synthetic
    assert result.text.startswith("Not run: the test's bound ran out"), result.text


async def test_under_a_run_deadline_a_denial_is_still_a_denial(
    approvals: Approvals, tmp_path: Path
) -> None:
    async def ask(call: ToolCall, reason: str) -> AskAnswer:
        return "deny"

    runner = approvals.runner(
        tmp_path,
        ask,
        deadline=RunDeadline(anyio.current_time() + 3600, "the test's bound"),
    )
    result = await runner(call("a", "guarded", n=1))
    assert approvals.ran == [] and not result.synthetic
    assert result.text.startswith("Permission denied by the user"), result.text
