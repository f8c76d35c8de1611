"""The runner's plain path answers exactly what the staged chain would.

The runner skips a stage when it cannot change the outcome (no permission
opinion possible, no timeout, a plain str output); each stage still answers
the same when called on its own, which is what these check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import toolweave as tw
from toolweave._exceptions import ModelRetry, StopRun, ToolError
from toolweave.execution import (
    ExecutionConfig,
    Hooks,
    PermissionMode,
    PermissionRules,
    PostToolUseDecision,
    PostToolUseInput,
    ToolRunner,
)
from toolweave.execution._authorize import PermissionGate
from toolweave.execution._decision import HookVerdict
from toolweave.execution._execute import execute
from toolweave.execution._output import ToolOutput, empty_placeholder, to_content
from toolweave.messages import Image, Text
from toolweave.tools import (
    Access,
    Concurrency,
    SessionState,
    ToolContext,
    ToolRegistry,
    tool,
)

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


# -- the runner's plain path against the staged chain ---------------------------
#
# With no timeout, no audit, no matching hook and no permission opinion, the
# runner's plan for the tool is its plain path (`_plain.run_plain`). Each row
# below is run that way and through the staged chain each option forces (a
# timeout: `execute`; the audit; a permission mode whose stage runs in full),
# and with options that keep the plain path but add work to it (hooks for
# other tools; a listener: the progress reporter); every variant must give the
# same result, field by field, and the same batch signals.


def _modifier() -> None:
    return None


def _raise(exc: BaseException) -> Any:
    def behave() -> Any:
        raise exc

    return behave


BEHAVIOURS: dict[str, Callable[[], Any]] = {
    "text": lambda: "plain text",
    "empty": lambda: "",
    "whitespace": lambda: "  \n\t ",
    "surrogate": lambda: "name \udcff end",
    "non-ascii": lambda: "caf\u00e9 \u2713",
    "none": lambda: None,
    "int": lambda: 42,
    "dict": lambda: {"a": [1, 2]},
    "blocks": lambda: [Text("one"), Image("AA==")],
    "empty blocks": lambda: [Text(" ")],
    "tool output": lambda: ToolOutput("changed", context_modifier=_modifier),
    "empty tool output": lambda: ToolOutput("", context_modifier=_modifier),
    "tool output of blocks": lambda: ToolOutput([Text("b")]),
    "ToolError": _raise(ToolError("not allowed here")),
    "empty ToolError": _raise(ToolError("")),
    "ModelRetry": _raise(ModelRetry("try a smaller n")),
    "StopRun": _raise(StopRun("enough")),
    "empty StopRun": _raise(StopRun("")),
    "ValueError": _raise(ValueError("bad \udcff value")),
    "bare exception": _raise(RuntimeError()),
    "CancelledError by itself": _raise(asyncio.CancelledError()),
}


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def probe(case: str) -> Any:
    """Behave as BEHAVIOURS[case] says."""
    await anyio.lowlevel.checkpoint()
    return BEHAVIOURS[case]()


def _no_op_hooks() -> Hooks:
    hooks = Hooks()

    @hooks.post_tool_use("someone_else")
    def elsewhere(data: PostToolUseInput) -> None:
        raise AssertionError("never called: it matches another tool")

    return hooks


VARIANTS: dict[str, dict[str, Any]] = {
    "timeout (execute)": {"config": ExecutionConfig(default_timeout=60)},
    "audit warn": {"audit": "warn"},
    "audit enforce and a timeout": {
        "audit": "enforce",
        "config": ExecutionConfig(default_timeout=60),
    },
    "hooks for other tools": {"hooks": _no_op_hooks()},
    "a listener (progress reporter)": {"on_event": lambda event: None},
    "bypass mode (full permission stage)": {"mode": PermissionMode.BYPASS},
    "accept_edits mode": {"mode": PermissionMode.ACCEPT_EDITS},
}

_FAST = ExecutionConfig(default_timeout=None)


def _fields(result: tw.ToolResult) -> tuple[Any, ...]:
    return (
        result.call_id,
        result.content,
        result.is_error,
        result.synthetic,
        result.context_modifier,
    )


async def _run(case: str, **options: Any) -> tuple[tuple[Any, ...], object]:
    options.setdefault("config", _FAST)
    runner = ToolRunner(ToolRegistry([probe]), state=SessionState(), **options)
    result = await runner(tw.ToolCall("c1", "probe", {"case": case}, key="0.0"))
    return _fields(result), runner.take_signals()


@pytest.mark.parametrize("case", list(BEHAVIOURS))
async def test_the_staged_chain_answers_as_the_plain_path(case: str) -> None:
    fast = await _run(case)
    for name, options in VARIANTS.items():
        assert await _run(case, **options) == fast, name


async def test_the_plain_path_maps_as_the_stages_do() -> None:
    """The plain path's answers themselves (so both sides cannot be wrong alike)."""
    rows = {
        "text": ("plain text", False, None),
        "surrogate": ("name \ufffd end", False, None),
        "tool output": ("changed", False, _modifier),
        "ToolError": ("not allowed here", True, None),
        "empty ToolError": ("ToolError", True, None),
        "StopRun": ("enough", False, None),
        "bare exception": ("RuntimeError", True, None),
        "CancelledError by itself": (
            "CancelledError raised by the tool itself (nothing cancelled it)",
            True,
            None,
        ),
    }
    for case, (content, is_error, modifier) in rows.items():
        (_, got, error, synthetic, got_modifier), signals = await _run(case)
        assert (got, error, got_modifier) == (content, is_error, modifier), case
        assert not synthetic
        assert signals.stop == (case == "StopRun")
    for case in ("empty", "whitespace", "none", "empty blocks", "empty tool output"):
        (_, content, is_error, *_), _ = await _run(case)
        assert (content, is_error) == (empty_placeholder("probe"), False), case


async def test_a_real_cancellation_propagates_on_the_plain_path() -> None:
    runner = ToolRunner(ToolRegistry([probe]), state=SessionState(), config=_FAST)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await runner(tw.ToolCall("c1", "probe", {"case": "text"}))
        raise AssertionError("not reached: the cancel propagates")  # pragma: no cover
    assert scope.cancelled_caught


async def test_stages_changed_between_calls_are_seen_by_the_next_call() -> None:
    """The plan is made again when a hook is added: the hook applies to the next call."""
    hooks = Hooks()
    runner = ToolRunner(
        ToolRegistry([probe]), state=SessionState(), config=_FAST, hooks=hooks
    )
    call = tw.ToolCall("c1", "probe", {"case": "text"})
    assert (await runner(call)).content == "plain text"

    seen: list[str] = []

    @hooks.post_tool_use("probe")
    def later(data: PostToolUseInput) -> PostToolUseDecision:
        seen.append(data.call.id)
        return PostToolUseDecision(additional_context="checked")

    assert (await runner(call)).content == "plain text"
    assert seen == ["c1"]
    assert runner.take_signals().additional_context == ("checked",)


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access(), max_result_chars=None)
async def pager(size: int) -> str:
    """A tool that pages its own output: never persisted."""
    return "x" * size


async def test_a_tool_never_persisted_answers_alike_on_both_paths(
    tmp_path: Path,
) -> None:
    results = []
    for config in (
        ExecutionConfig(default_timeout=None, max_result_chars=10, preview_chars=5),
        ExecutionConfig(default_timeout=60, max_result_chars=10, preview_chars=5),
    ):
        state = SessionState(results_dir=tmp_path)
        runner = ToolRunner(ToolRegistry([pager]), state=state, config=config)
        results.append(await runner(tw.ToolCall("c1", "pager", {"size": 50})))
    assert results[0] == results[1] == tw.ToolResult("c1", "x" * 50)
    assert not runner.replacements


@pytest.mark.parametrize(
    "rules",
    [None, PermissionRules(), PermissionRules(deny=["echo"])],
    ids=["none", "empty", "deny"],
)
@pytest.mark.parametrize("mode", list(PermissionMode))
def test_allows_at_once_follows_rules_and_mode_however_they_were_set(
    rules: PermissionRules | None, mode: PermissionMode
) -> None:
    """The gate keeps "no opinion possible" as one flag; every way of setting it agrees."""
    expected = not rules and mode is PermissionMode.DEFAULT
    made = PermissionGate(rules, mode, None, SessionState())
    assert made.allows_at_once(echo, None) is expected
    changed = PermissionGate(None, PermissionMode.DEFAULT, None, SessionState())
    changed.mode = mode
    changed.rules = rules
    assert changed.allows_at_once(echo, None) is expected
    assert (changed.rules, changed.mode) == (rules, mode)
    changed.rules = None
    changed.mode = PermissionMode.DEFAULT
    assert changed.allows_at_once(echo, None)
    assert not changed.allows_at_once(echo, HookVerdict("allow"))
