"""RunStart hooks: registration, order, and failures that never fail the run (issue 13 item 11c)."""

from __future__ import annotations

import pytest

from toolweave.execution import Hooks, RunStartDecision, RunStartInput, RunStartOutcome

pytestmark = pytest.mark.anyio

DATA = RunStartInput(run_id="r1", prompt="go", resumed=True)


async def test_contexts_come_back_in_registration_order_from_sync_and_async_hooks() -> (
    None
):
    hooks = Hooks()
    seen: list[RunStartInput] = []
    assert not hooks.has_run_start_hooks

    @hooks.run_start
    def first(data: RunStartInput) -> RunStartDecision:
        seen.append(data)
        return RunStartDecision(additional_context="one")

    @hooks.run_start()
    async def second(data: RunStartInput) -> RunStartDecision | None:
        return RunStartDecision(additional_context="two")

    @hooks.run_start
    def silent(data: RunStartInput) -> None:
        return None

    @hooks.run_start
    def empty(data: RunStartInput) -> RunStartDecision:
        return RunStartDecision()

    assert hooks.has_run_start_hooks
    assert not hooks.has_tool_hooks
    outcome = await hooks.run_run_start_hooks(DATA)
    assert outcome == RunStartOutcome(("one", "two"), ())
    assert seen == [DATA]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (lambda data: 1 / 0, "raised ZeroDivisionError"),
        (lambda data: "just text", "returned 'just text'; ignored"),
    ],
    ids=["raises", "wrong-type"],
)
async def test_a_failing_hook_is_reported_and_the_others_still_count(
    bad: object, problem: str
) -> None:
    hooks = Hooks()
    hooks.run_start(bad)  # type: ignore[arg-type]
    hooks.run_start(lambda data: RunStartDecision(additional_context="kept"))
    outcome = await hooks.run_run_start_hooks(DATA)
    assert outcome.contexts == ("kept",)
    (line,) = outcome.problems
    assert line.startswith("RunStart hook ") and problem in line
