"""Table-driven: every lifecycle stage's failure ends only its own call, on both backends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import pytest
from lifecycle_helpers import Events, call, dispatch, make_state, registry_with
from pydantic import BaseModel, ConfigDict

from toolweave._exceptions import ModelRetry, ToolError
from toolweave.events import Warning as WarningEvent
from toolweave.execution import (
    Hooks,
    PermissionRules,
    PostToolUseDecision,
    PreToolUseDecision,
    PreToolUseInput,
    ToolRunner,
)
from toolweave.execution._execute import EFFECTS_UNKNOWN_AFTER_TIMEOUT as UNKNOWN
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import (
    Access,
    Concurrency,
    Interrupt,
    PermissionCheck,
    Tool,
    ToolContext,
    tool,
)


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = 1
    path: str = "/data/a"


class Staged(Tool):
    """A tool that fails at the stage it is told to (`fail_at`, read from the input)."""

    def __init__(self) -> None:
        super().__init__(
            name="staged",
            description="Fails on purpose.",
            input_model=_Input,
            concurrency=Concurrency.SAFE,
            access=lambda args: Access(reads=(f"fs:{args['path']}",)),
            interrupt=Interrupt.CANCEL,
            timeout=0.05,
        )
        self.fail_at = ""

    async def validate_input(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> str | None:
        if self.fail_at == "validate_returns":
            return "n must be odd"
        if self.fail_at == "validate_raises":
            raise ValueError("validator crashed")
        return None

    def permission_subject(self, args: dict[str, Any]) -> str | PurePath | None:
        if self.fail_at == "subject_raises":
            raise RuntimeError("no subject")
        return PurePath(args["path"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        if self.fail_at == "check_denies":
            return PermissionCheck("deny", "outside the sandbox")
        if self.fail_at == "check_raises":
            raise RuntimeError("checker crashed")
        return PermissionCheck()

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        import anyio

        match self.fail_at:
            case "call_raises":
                raise OSError("disk full")
            case "model_retry":
                raise ModelRetry("try a smaller n")
            case "tool_error":
                raise ToolError("the service said no")
            case "hangs":
                await anyio.sleep_forever()
            case "error_result":
                return ToolResult("ignored", "remote error 503", is_error=True)
        return f"staged {args['n']}"


def _raising_pre(data: PreToolUseInput) -> PreToolUseDecision:
    raise RuntimeError("pre hook bug")


def _wrong_type_pre(data: PreToolUseInput) -> object:
    return "allow"


def _raising_post(data: object) -> None:
    raise ZeroDivisionError("post hook bug")


def _raising_failure(data: object) -> None:
    raise KeyError("missing")


def _hooks(**register: Callable[..., object]) -> Hooks:
    hooks = Hooks()
    for kind, fn in register.items():
        getattr(hooks, kind)("staged")(fn)
    return hooks


async def _deny_answer(call: ToolCall, reason: str) -> str:
    return "deny"


@dataclass
class Row:
    stage: str
    expected: str
    fail_at: str = ""
    make_call: Callable[[], ToolCall] = field(
        default=lambda: call("bad", "staged", n=3)
    )
    runner_options: Callable[[], dict[str, Any]] = field(default=dict)
    warns: bool = False


ROWS = [
    Row(
        "lookup",
        "Unknown tool 'stagd'. Did you mean: 'staged'",
        make_call=lambda: call("bad", "stagd", n=1),
    ),
    Row(
        "invalid JSON arguments",
        "not valid JSON",
        make_call=lambda: ToolCall("bad", "staged", {}, raw_arguments='{"n": 1'),
    ),
    Row(
        "schema validation",
        "- n: Input should be a valid integer",
        make_call=lambda: call("bad", "staged", n="many"),
    ),
    Row(
        "input is not an object",
        "must be a JSON object",
        make_call=lambda: ToolCall("bad", "staged", ["n"]),  # type: ignore[arg-type]
    ),
    Row("validate_input returns a problem", "n must be odd", "validate_returns"),
    Row("validate_input raises", "validator crashed", "validate_raises"),
    Row(
        "PreToolUse hook raises",
        "PreToolUse hook _raising_pre failed: RuntimeError: pre hook bug",
        runner_options=lambda: {"hooks": _hooks(pre_tool_use=_raising_pre)},
        warns=True,
    ),
    Row(
        "PreToolUse hook returns a wrong type",
        "returned str, expected PreToolUseDecision or None",
        runner_options=lambda: {"hooks": _hooks(pre_tool_use=_wrong_type_pre)},
        warns=True,
    ),
    Row(
        "PreToolUse rewrite is invalid",
        "rewrote the input into an invalid one",
        runner_options=lambda: {
            "hooks": _hooks(
                pre_tool_use=lambda d: PreToolUseDecision(updated_input={"n": "x"})
            )
        },
    ),
    Row(
        "PreToolUse rewrite widens the scheduled access",
        "rewrite was refused: the rewritten call reads ['fs:/etc/passwd']",
        runner_options=lambda: {
            "hooks": _hooks(
                pre_tool_use=lambda d: PreToolUseDecision(
                    updated_input={"n": 1, "path": "/etc/passwd"}
                )
            )
        },
    ),
    Row(
        "PreToolUse hook denies",
        "Permission denied: hook says no",
        runner_options=lambda: {
            "hooks": _hooks(
                pre_tool_use=lambda d: PreToolUseDecision(
                    permission="deny", reason="hook says no"
                )
            )
        },
    ),
    Row(
        "deny rule",
        "Permission denied: denied by rule staged(//data/**)",
        runner_options=lambda: {
            "permissions": PermissionRules(deny=["staged(//data/**)"])
        },
    ),
    Row(
        "ask rule without a handler",
        "no one to ask (no terminal, no ask handler)",
        runner_options=lambda: {"permissions": PermissionRules(ask=["staged"])},
    ),
    Row(
        "ask handler says deny",
        "Permission denied by the user: rule staged requires approval",
        runner_options=lambda: {
            "permissions": PermissionRules(ask=["staged"]),
            "ask": _deny_answer,
        },
    ),
    Row(
        "tool's own check denies",
        "Permission denied: outside the sandbox",
        "check_denies",
    ),
    Row(
        "tool's own check raises",
        "Permission check failed: RuntimeError",
        "check_raises",
    ),
    Row(
        "permission_subject raises",
        "Permission check failed: RuntimeError: no subject",
        "subject_raises",
        runner_options=lambda: {"permissions": PermissionRules(allow=["echo"])},
    ),
    Row("tool raises", "OSError: disk full", "call_raises"),
    Row("tool raises ModelRetry", "try a smaller n", "model_retry"),
    Row("tool raises ToolError", "the service said no", "tool_error"),
    Row("tool times out", "Tool 'staged' timed out after 0.05 s." + UNKNOWN, "hangs"),
    Row("tool returns an error result", "remote error 503", "error_result"),
    Row(
        "PostToolUse hook raises",
        "PostToolUse hook _raising_post failed: ZeroDivisionError: post hook bug",
        runner_options=lambda: {"hooks": _hooks(post_tool_use=_raising_post)},
        warns=True,
    ),
    Row(
        "PostToolUseFailure hook raises",
        "PostToolUseFailure hook _raising_failure failed: KeyError",
        "call_raises",
        runner_options=lambda: {
            "hooks": _hooks(post_tool_use_failure=_raising_failure)
        },
        warns=True,
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize("row", ROWS, ids=[r.stage for r in ROWS])
async def test_a_failing_stage_ends_only_its_own_call(row: Row, tmp_path: Path) -> None:
    staged = Staged()
    staged.fail_at = row.fail_at
    registry = registry_with(staged)
    events = Events()
    runner = ToolRunner(
        registry, state=make_state(tmp_path), on_event=events, **row.runner_options()
    )
    calls = [
        call("a", "echo", text="before"),
        row.make_call(),
        call("b", "shout", text="after"),
    ]

    results = await dispatch(runner, registry, calls)

    assert [r.call_id for r in results] == ["a", "bad", "b"]
    assert results[0] == ToolResult("a", "before")
    assert results[2] == ToolResult("b", "AFTER")
    bad = results[1]
    assert bad.is_error and not bad.synthetic
    assert row.expected in bad.text
    assert runner.statistics().errors == 1
    warnings = events.of(WarningEvent)
    assert bool(warnings) is row.warns
    if row.warns:
        assert row.expected in warnings[0].message


@pytest.mark.anyio
async def test_the_same_batch_passes_when_no_stage_fails(tmp_path: Path) -> None:
    staged = Staged()
    registry = registry_with(staged)
    hooks = Hooks()
    seen: list[str] = []
    hooks.pre_tool_use(lambda d: seen.append(f"pre {d.call.id}"))
    hooks.post_tool_use(
        lambda d: PostToolUseDecision(additional_context=f"post {d.call.id}")
    )
    runner = ToolRunner(
        registry,
        state=make_state(tmp_path),
        hooks=hooks,
        permissions=PermissionRules(allow=["staged(//data/*)"]),
    )
    calls = [
        call("a", "echo", text="x"),
        call("ok", "staged", n=3),
        call("b", "say", text="y"),
    ]

    results = await dispatch(runner, registry, calls)

    assert results == [
        ToolResult("a", "x"),
        ToolResult("ok", "staged 3"),
        ToolResult("b", "Y"),
    ]
    assert sorted(seen) == ["pre a", "pre b", "pre ok"]
    assert runner.take_signals().additional_context == ("post a", "post ok", "post b")


@tool(hidden=True)
async def secret_admin() -> str:
    """Not offered to the model."""
    return "admin"


@pytest.mark.anyio
async def test_unknown_tool_suggestions_skip_hidden_tools(tmp_path: Path) -> None:
    runner = ToolRunner(registry_with(secret_admin), state=make_state(tmp_path))
    result = await runner(call("1", "secret_admn"))
    assert result == ToolResult(
        "1", "Unknown tool 'secret_admn'. Available tools: echo, shout.", is_error=True
    )


class BrokenDefinition(Tool):
    """A tool whose declaration is wrong in a way no stage checks."""

    def __init__(self) -> None:
        super().__init__(name="broken", description="", input_model=_Input)
        self.max_result_chars = "many"  # type: ignore[assignment]

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return "fine"


@pytest.mark.anyio
async def test_a_bug_behind_a_stage_is_an_error_result_not_a_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = registry_with(BrokenDefinition())
    runner = ToolRunner(registry, state=make_state(tmp_path))
    results = await dispatch(
        runner, registry, [call("1", "broken"), call("2", "echo", text="ok")]
    )
    assert results[0].is_error
    assert results[0].text.startswith("Internal error in toolweave while running")
    assert results[1] == ToolResult("2", "ok")
    assert "internal error while running call 1" in caplog.text
