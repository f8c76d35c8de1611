"""Each tool's calls take the path its plan names: plain when no stage can act, else staged.

The runner plans once per tool and caches it; a plan is made again when what
it was made from changes (a permission mode set on the runner, a hook added).
The options come as one `RunnerOptions` record or as its fields' keywords.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_type_hints

import pytest
from pydantic import BaseModel

import toolweave as tw
from toolweave.execution import (
    ExecutionConfig,
    Hooks,
    LifecycleKeywords,
    PermissionMode,
    PermissionRules,
    PreToolUseDecision,
    PreToolUseInput,
    RunnerKeywords,
    RunnerOptions,
    ToolRunner,
    _runner,
)
from toolweave.tools import Access, Concurrency, SessionState, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio

_NO_TIMEOUT = ExecutionConfig(default_timeout=None)


@tw.tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def plain(text: str) -> str:
    """Echo."""
    return text


class _Text(BaseModel):
    text: str


class _Validated(tw.Tool):
    """Echo, with its own `validate_input`."""

    def __init__(self) -> None:
        super().__init__(name="validated", description="Echo.", input_model=_Text)

    async def validate_input(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> str | None:
        return None if args["text"] != "bad" else "bad text"

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return str(args["text"])


def _validated() -> tw.Tool:
    return _Validated()


@pytest.fixture
def staged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of tools whose calls the runner sent down the staged chain."""
    seen: list[str] = []
    run_staged = _runner.run_staged

    async def spy(lc: Any, plan: Any, call: tw.ToolCall) -> tw.ToolResult:
        seen.append(call.name)
        return await run_staged(lc, plan, call)

    monkeypatch.setattr(_runner, "run_staged", spy)
    return seen


def _call(name: str, text: str = "hi") -> tw.ToolCall:
    return tw.ToolCall("c1", name, {"text": text})


async def test_one_runner_plans_each_tool_on_its_own(staged: list[str]) -> None:
    tools = ToolRegistry([plain, _validated()])
    runner = ToolRunner(tools, state=SessionState(), config=_NO_TIMEOUT)
    assert (await runner(_call("plain"))).content == "hi"
    assert staged == []
    assert (await runner(_call("validated"))).content == "hi"
    refused = await runner(_call("validated", "bad"))
    assert (refused.content, refused.is_error) == ("bad text", True)
    assert staged == ["validated", "validated"]


@pytest.mark.parametrize(
    "options",
    [
        {"config": ExecutionConfig(default_timeout=30)},
        {"audit": "warn"},
        {"permissions": PermissionRules(deny=["other"])},
        {"mode": PermissionMode.BYPASS},
        {"deadline": tw.execution.RunDeadline(at=10.0**9, what="a bound")},
    ],
    ids=["timeout", "audit", "rules", "mode", "deadline"],
)
async def test_a_stage_that_can_act_takes_the_staged_chain(
    options: dict[str, Any], staged: list[str]
) -> None:
    options.setdefault("config", _NO_TIMEOUT)
    runner = ToolRunner(ToolRegistry([plain]), state=SessionState(), **options)
    assert (await runner(_call("plain"))).content == "hi"
    assert staged == ["plain"]


async def test_listeners_and_the_start_barrier_keep_the_plain_path(
    staged: list[str],
) -> None:
    events: list[object] = []
    barrier: list[str] = []

    async def record(call: tw.ToolCall) -> str | None:
        barrier.append(call.id)
        return None

    runner = ToolRunner(
        ToolRegistry([plain]),
        state=SessionState(),
        config=_NO_TIMEOUT,
        on_event=events.append,
        before_start=record,
    )
    assert (await runner(_call("plain"))).content == "hi"
    assert staged == []
    assert barrier == ["c1"]
    assert [type(e).__name__ for e in events] == ["ToolRunning"]


async def test_a_new_mode_or_a_new_hook_plans_again(staged: list[str]) -> None:
    hooks = Hooks()
    runner = ToolRunner(
        ToolRegistry([plain]), state=SessionState(), config=_NO_TIMEOUT, hooks=hooks
    )
    await runner(_call("plain"))
    assert staged == []
    runner.mode = PermissionMode.PLAN
    await runner(_call("plain"))
    assert staged == ["plain"]
    runner.mode = PermissionMode.DEFAULT
    await runner(_call("plain"))
    assert staged == ["plain"]

    @hooks.pre_tool_use("plain")
    def deny(data: PreToolUseInput) -> PreToolUseDecision:
        return PreToolUseDecision(permission="deny", reason="not now")

    denied = await runner(_call("plain"))
    assert staged == ["plain", "plain"]
    assert denied.is_error
    assert "not now" in denied.text


def test_the_keywords_are_the_record_s_fields() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(RunnerOptions)}
    keywords = get_type_hints(RunnerKeywords)
    assert set(keywords) == set(fields)
    assert set(get_type_hints(LifecycleKeywords)) < set(fields)
    assert get_type_hints(RunnerOptions) == keywords


async def test_options_as_a_record_or_as_keywords_alike() -> None:
    events: list[object] = []
    by_record = ToolRunner(
        ToolRegistry([plain]),
        state=SessionState(),
        options=RunnerOptions(audit="warn", on_event=events.append),
    )
    by_keywords = ToolRunner(
        ToolRegistry([plain]),
        state=SessionState(),
        audit="warn",
        on_event=events.append,
    )
    assert by_record.options == by_keywords.options
    assert by_record.audit == by_keywords.audit == "warn"
    both = ToolRunner(
        ToolRegistry([plain]),
        state=SessionState(),
        options=RunnerOptions(audit="warn", mode=PermissionMode.PLAN),
        audit="enforce",
    )
    assert (both.audit, both.mode) == ("enforce", PermissionMode.PLAN)
    assert (await by_record(_call("plain"))).content == "hi"
    assert (await by_keywords(_call("plain"))).content == "hi"
