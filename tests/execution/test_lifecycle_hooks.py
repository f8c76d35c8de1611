"""Hooks: matching, sync and async, rewrite, deny/ask, signals, replace_output, stop hooks."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from lifecycle_helpers import (
    Events,
    call,
    cut_when,
    dispatch,
    make_state,
    registry_with,
)

from toolweave._exceptions import StopRun
from toolweave.events import Warning as WarningEvent
from toolweave.execution import (
    BatchSignals,
    ExecutionConfig,
    Hooks,
    PostToolUseDecision,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreToolUseDecision,
    PreToolUseInput,
    StopDecision,
    StopInput,
    ToolOutput,
    ToolRunner,
)
from toolweave.execution._execute import EFFECTS_UNKNOWN_AFTER_TIMEOUT as UNKNOWN
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import Access, Concurrency, Interrupt, ToolContext, tool


def _runner(tmp_path: Path, hooks: Hooks, *tools: Any, **options: Any) -> ToolRunner:
    return ToolRunner(
        registry_with(*tools), state=make_state(tmp_path), hooks=hooks, **options
    )


@pytest.mark.anyio
async def test_sync_and_async_hooks_run_in_order_for_matching_tools(
    tmp_path: Path,
) -> None:
    hooks = Hooks()
    log: list[str] = []

    @hooks.pre_tool_use
    def everything(data: PreToolUseInput) -> None:
        log.append(f"sync * {data.tool_name}")

    @hooks.pre_tool_use("SHOUT")  # case-insensitive
    async def loud(data: PreToolUseInput) -> None:
        await anyio.lowlevel.checkpoint()
        log.append(f"async SHOUT {data.call.name}")

    @hooks.pre_tool_use("sa?")  # glob, matched against aliases too
    def alias(data: PreToolUseInput) -> None:
        log.append("alias")

    @hooks.post_tool_use("e*")
    async def after(data: PostToolUseInput) -> None:
        log.append(f"post {data.tool_name} {data.output!r} {data.result.text!r}")

    runner = _runner(tmp_path, hooks)
    assert (await runner(call("1", "say", text="a"))).text == "A"
    assert (await runner(call("2", "echo", text="b"))).text == "b"
    assert log == [
        "sync * shout",
        "async SHOUT say",
        "alias",
        "sync * echo",
        "post echo 'b' 'b'",
    ]


def test_a_hook_must_be_callable() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        Hooks().pre_tool_use("x")(42)  # type: ignore[type-var]


@tool
async def guarded(text: str) -> str:
    """Refuses the word forbidden."""
    return f"got {text}"


async def _refuse_forbidden(args: dict[str, Any], ctx: ToolContext) -> str | None:
    return "forbidden is forbidden" if args["text"] == "forbidden" else None


guarded.validate_input = _refuse_forbidden  # type: ignore[method-assign]


@pytest.mark.anyio
async def test_a_rewrite_is_validated_again_and_seen_by_the_next_hook(
    tmp_path: Path,
) -> None:
    hooks = Hooks()
    seen: list[Any] = []
    hooks.pre_tool_use(
        lambda d: PreToolUseDecision(updated_input={"text": d.input["text"] * 2})
    )
    hooks.pre_tool_use(lambda d: seen.append(dict(d.input)))
    runner = _runner(tmp_path, hooks, guarded)
    assert (await runner(call("1", "guarded", text="ab"))).text == "got abab"
    assert seen == [{"text": "abab"}]

    hooks.pre_tool_use(
        lambda d: PreToolUseDecision(updated_input={"text": "forbidden"})
    )
    refused = await runner(call("2", "guarded", text="ok"))
    assert refused == ToolResult("2", "forbidden is forbidden", is_error=True)


@pytest.mark.anyio
async def test_deny_and_ask_from_a_hook(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool
    async def act(text: str) -> str:
        """The act test tool."""
        ran.append(text)
        return text

    hooks = Hooks()
    hooks.pre_tool_use(
        lambda d: (
            PreToolUseDecision(permission="deny", reason="not today")
            if d.input["text"] == "no"
            else PreToolUseDecision(
                permission="ask", reason=f"may I {d.input['text']}?"
            )
        )
    )
    asked: list[str] = []

    async def handler(item: ToolCall, reason: str) -> Any:
        asked.append(reason)
        return "allow"

    with_handler = _runner(tmp_path, hooks, act, ask=handler)
    assert (await with_handler(call("1", "act", text="no"))).text == (
        "Permission denied: not today"
    )
    assert (await with_handler(call("2", "act", text="go"))).text == "go"
    assert asked == ["may I go?"]
    without = _runner(tmp_path, hooks, act)
    denied = await without(call("3", "act", text="go"))
    assert denied.is_error and "no ask handler" in denied.text
    assert ran == ["go"]


@pytest.mark.anyio
async def test_the_strictest_hook_wins(tmp_path: Path) -> None:
    hooks = Hooks()
    hooks.pre_tool_use(lambda d: PreToolUseDecision(permission="deny", reason="first"))
    hooks.pre_tool_use(
        lambda d: PreToolUseDecision(permission="allow", reason="second")
    )
    runner = _runner(tmp_path, hooks)
    assert (
        await runner(call("1", "echo", text="x"))
    ).text == "Permission denied: first"


@pytest.mark.anyio
async def test_prevent_continuation_and_context_come_back_in_call_order(
    tmp_path: Path,
) -> None:
    first_may_finish = anyio.Event()

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def step(n: int) -> str:
        """The step test tool."""
        if n == 1:
            await first_may_finish.wait()
        else:
            first_may_finish.set()
        return f"step {n}"

    hooks = Hooks()
    hooks.pre_tool_use(
        lambda d: PreToolUseDecision(additional_context=f"pre {d.input['n']}")
    )

    @hooks.post_tool_use
    async def post(data: PostToolUseInput) -> PostToolUseDecision:
        n = data.input["n"]
        return PostToolUseDecision(
            additional_context=f"post {n}",
            prevent_continuation=n == 2,
            stop_reason="step 2 is the last",
        )

    registry = registry_with(step)
    runner = ToolRunner(registry, state=make_state(tmp_path), hooks=hooks)
    results = await dispatch(
        runner, registry, [call("a", "step", n=1), call("b", "step", n=2)]
    )
    assert [r.text for r in results] == ["step 1", "step 2"]  # call 2 finished first
    assert runner.take_signals() == BatchSignals(
        stop=True,
        reason="step 2 is the last",
        additional_context=("pre 1", "post 1", "pre 2", "post 2"),
    )
    assert runner.take_signals() == BatchSignals()  # taken, then reset


@pytest.mark.anyio
async def test_a_pre_hook_stop_still_runs_the_call(tmp_path: Path) -> None:
    hooks = Hooks()
    hooks.pre_tool_use(lambda d: PreToolUseDecision(prevent_continuation=True))
    runner = _runner(tmp_path, hooks)
    assert (await runner(call("1", "echo", text="ran"))).text == "ran"
    signals = runner.take_signals()
    assert (
        signals.stop and signals.reason == "a PreToolUse hook on echo stopped the run"
    )


@pytest.mark.anyio
async def test_a_tool_raising_stop_run_gives_a_result_and_a_stop_signal(
    tmp_path: Path,
) -> None:
    @tool
    async def finish(summary: str) -> str:
        """The finish test tool."""
        raise StopRun(f"done: {summary}")

    runner = _runner(tmp_path, Hooks(), finish)
    assert await runner(call("1", "finish", summary="all good")) == ToolResult(
        "1", "done: all good"
    )
    assert runner.take_signals() == BatchSignals(stop=True, reason="done: all good")


@pytest.mark.anyio
async def test_replace_output_only_for_replaceable_tools(tmp_path: Path) -> None:
    def modifier() -> None:
        return None

    @tool(replaceable_output=True)
    async def remote(text: str) -> ToolOutput:
        """The remote test tool."""
        return ToolOutput(f"raw {text}", context_modifier=modifier)

    hooks = Hooks()
    seen: list[str] = []

    @hooks.post_tool_use
    def redact(data: PostToolUseInput) -> PostToolUseDecision:
        seen.append(data.result.text)
        return PostToolUseDecision(replace_output={"redacted": len(data.result.text)})

    hooks.post_tool_use(lambda d: seen.append(d.result.text))
    events = Events()
    runner = _runner(tmp_path, hooks, remote, on_event=events)
    replaced = await runner(call("1", "remote", text="secret"))
    assert replaced == ToolResult("1", '{"redacted":10}')
    assert replaced.context_modifier is modifier
    assert seen == ["raw secret", '{"redacted":10}']
    assert events.of(WarningEvent) == []

    kept = await runner(call("2", "echo", text="plain"))
    assert kept == ToolResult("2", "plain")
    [warning] = events.of(WarningEvent)
    assert "does not declare replaceable_output" in warning.message


@pytest.mark.anyio
async def test_a_replacement_is_persisted_when_large(tmp_path: Path) -> None:
    @tool(replaceable_output=True)
    async def small() -> str:
        """The small test tool."""
        return "small"

    hooks = Hooks()
    hooks.post_tool_use(lambda d: PostToolUseDecision(replace_output="line\n" * 100))
    runner = _runner(
        tmp_path,
        hooks,
        small,
        config=ExecutionConfig(max_result_chars=200, preview_chars=50),
    )
    result = await runner(call("big", "small"))
    assert result.text.startswith("<persisted-output>")
    assert runner.replacement_for("big") == result.text
    saved = tmp_path / "session" / "tool-results" / "big.txt"
    assert saved.read_text() == "line\n" * 100


@pytest.mark.anyio
async def test_failure_hooks_see_failures_and_only_failures(tmp_path: Path) -> None:
    @tool(interrupt=Interrupt.CANCEL, timeout=0.01)
    async def flaky(mode: str) -> Any:
        """The flaky test tool."""
        if mode == "raise":
            raise ValueError("bad value")
        if mode == "hang":
            await anyio.sleep_forever()
        if mode == "error":
            return ToolResult("x", "remote says no", is_error=True)
        return "fine"

    hooks = Hooks()
    failures: list[tuple[str, str]] = []
    posts: list[str] = []

    @hooks.post_tool_use_failure("flaky")
    async def on_failure(data: PostToolUseFailureInput) -> PostToolUseDecision:
        failures.append((data.call.id, data.error))
        return PostToolUseDecision(additional_context=f"{data.call.id} failed")

    @hooks.post_tool_use_failure
    def silent(data: PostToolUseFailureInput) -> None:
        return None

    hooks.post_tool_use(lambda d: posts.append(d.call.id))
    runner = _runner(tmp_path, hooks, flaky)
    for mode in ("raise", "hang", "error", "fine"):
        await runner(call(mode, "flaky", mode=mode))
    await runner(call("invalid", "flaky", mode=3))  # never ran: no failure hook
    assert failures == [
        ("raise", "ValueError: bad value"),
        ("hang", "Tool 'flaky' timed out after 0.01 s." + UNKNOWN),
        ("error", "remote says no"),
    ]
    assert posts == ["fine"]
    assert runner.take_signals().additional_context == (
        "raise failed",
        "hang failed",
        "error failed",
    )


@pytest.mark.anyio
async def test_a_raising_hook_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = Hooks()

    @hooks.pre_tool_use("echo")
    def broken(data: PreToolUseInput) -> None:
        raise RuntimeError("oops")

    runner = _runner(tmp_path, hooks)
    with caplog.at_level(logging.ERROR, logger="toolweave.execution"):
        result = await runner(call("1", "echo", text="x"))
    assert result.text == "PreToolUse hook broken failed: RuntimeError: oops"
    [record] = caplog.records
    assert record.getMessage() == "PreToolUse hook broken raised on call 1"
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


@pytest.mark.anyio
async def test_hooks_of_parallel_calls_run_concurrently(tmp_path: Path) -> None:
    inside = 0
    release = anyio.Event()
    hooks = Hooks()

    @hooks.pre_tool_use
    async def slow_hook(data: PreToolUseInput) -> None:
        nonlocal inside
        inside += 1
        await release.wait()

    registry = registry_with()
    runner = ToolRunner(registry, state=make_state(tmp_path), hooks=hooks)
    results: list[ToolResult] = []

    async def drive() -> None:
        calls = [call(str(i), "echo", text=str(i)) for i in range(3)]
        results.extend(await dispatch(runner, registry, calls))

    async with anyio.create_task_group() as tg:
        tg.start_soon(drive)
        await anyio.wait_all_tasks_blocked()
        assert inside == 3  # every call's hook is in at once
        release.set()
    assert [r.text for r in results] == ["0", "1", "2"]


@pytest.mark.anyio
async def test_stop_hooks(caplog: pytest.LogCaptureFixture) -> None:
    hooks = Hooks()
    assert await hooks.run_stop_hooks(StopInput(output="done")) is None
    seen: list[bool] = []

    @hooks.stop
    def tests_pass(data: StopInput) -> StopDecision | None:
        seen.append(data.stop_hook_active)
        return None if data.stop_hook_active else StopDecision(reason="run the tests")

    @hooks.stop()
    async def lint(data: StopInput) -> StopDecision | None:
        return StopDecision(reason="fix lint") if "lint" not in data.output else None

    @hooks.stop
    def broken(data: StopInput) -> StopDecision:
        raise RuntimeError("stop hook bug")

    hooks.stop(lambda data: "not a decision")  # type: ignore[type-var]
    with caplog.at_level(logging.ERROR, logger="toolweave.execution"):
        first = await hooks.run_stop_hooks(StopInput(output="done"))
        second = await hooks.run_stop_hooks(
            StopInput(output="lint ok", stop_hook_active=True)
        )
    assert first == StopDecision(reason="run the tests\nfix lint")
    assert second is None
    assert seen == [False, True]
    assert len(caplog.records) == 4  # the raising and the ill-typed hook, twice each
    assert not hooks.has_tool_hooks


@tool(
    concurrency=lambda args: args["mode"] == "read",
    access=lambda args: (
        Access(reads=(f"fs:{args['path']}",))
        if args["mode"] == "read"
        else Access(writes=(f"fs:{args['path']}",))
    ),
)
async def touch(path: str, mode: str) -> str:
    """Read or write a path."""
    return f"{mode} {path}"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (
            {"path": "/d", "mode": "write"},
            {"path": "/d/sub", "mode": "write"},
            "write /d/sub",
        ),
        (
            {"path": "/d", "mode": "write"},
            {"path": "/d/x", "mode": "read"},
            "read /d/x",
        ),
        ({"path": "/d", "mode": "read"}, {"path": "/d/x", "mode": "read"}, "read /d/x"),
        (
            {"path": "/d", "mode": "read"},
            {"path": "/d", "mode": "write"},
            "not concurrency-safe",
        ),
        (
            {"path": "/d", "mode": "write"},
            {"path": "/e", "mode": "write"},
            "writes ['fs:/e']",
        ),
        (
            {"path": "/d", "mode": "write"},
            {"path": "/e", "mode": "read"},
            "reads ['fs:/e']",
        ),
    ],
)
async def test_a_rewrite_may_narrow_but_not_widen_the_schedule(
    tmp_path: Path, before: dict[str, str], after: dict[str, str], expected: str
) -> None:
    hooks = Hooks()
    hooks.pre_tool_use(lambda d: PreToolUseDecision(updated_input=after))
    runner = _runner(tmp_path, hooks, touch)
    result = await runner(call("1", "touch", **before))
    assert expected in result.text
    assert result.is_error is ("rewrite was refused" in result.text)


@pytest.mark.anyio
async def test_a_failure_with_no_matching_failure_hook(tmp_path: Path) -> None:
    @tool
    async def fails() -> str:
        """The fails test tool."""
        raise RuntimeError("nope")

    hooks = Hooks()
    hooks.post_tool_use_failure("other")(lambda d: None)
    runner = _runner(tmp_path, hooks, fails)
    assert await runner(call("1", "fails")) == ToolResult(
        "1", "RuntimeError: nope", is_error=True
    )


@pytest.mark.anyio
async def test_a_call_cancelled_in_its_post_hooks_says_it_finished_and_keeps_its_change(
    tmp_path: Path,
) -> None:
    """Issue 13 item 11d: the tool ran; only its PostToolUse hooks were cut."""
    applied: list[str] = []
    inside = anyio.Event()

    @tool
    async def change() -> ToolOutput:
        """Change shared context."""
        return ToolOutput("secret", context_modifier=lambda: applied.append("x"))

    hooks = Hooks()

    @hooks.post_tool_use
    async def hold(data: PostToolUseInput) -> None:
        inside.set()
        await anyio.sleep_forever()

    runner = ToolRunner(registry_with(change), state=make_state(tmp_path), hooks=hooks)
    result = await cut_when(runner, call("c1", "change"), inside)
    assert result.is_error and not result.synthetic
    assert "finished" in result.text and "secret" not in result.text
    assert result.context_modifier is not None
    result.context_modifier()
    assert applied == ["x"]


@pytest.mark.anyio
async def test_a_call_cancelled_in_its_pre_hooks_says_it_never_started(
    tmp_path: Path,
) -> None:
    """Issue 13 item 11d: cut before the tool started, the answer says so."""
    ran: list[str] = []
    inside = anyio.Event()

    @tool
    async def change() -> str:
        """Would change something."""
        ran.append("x")
        return "changed"

    hooks = Hooks()

    @hooks.pre_tool_use
    async def hold(data: PreToolUseInput) -> None:
        inside.set()
        await anyio.sleep_forever()

    runner = ToolRunner(registry_with(change), state=make_state(tmp_path), hooks=hooks)
    result = await cut_when(runner, call("c1", "change"), inside)
    assert result.is_error and result.synthetic
    assert "never started" in result.text and ran == []


@pytest.mark.anyio
async def test_a_call_cancelled_in_its_failure_hooks_keeps_its_own_error(
    tmp_path: Path,
) -> None:
    """Issue 13 item 11d: the tool ran and failed; its error stands, its change kept."""
    applied: list[str] = []
    inside = anyio.Event()

    @tool
    async def broken() -> ToolOutput:
        """Fail after changing context."""
        return ToolOutput(
            ToolResult("c1", "disk full", is_error=True),
            context_modifier=lambda: applied.append("x"),
        )

    hooks = Hooks()

    @hooks.post_tool_use_failure
    async def hold(data: PostToolUseFailureInput) -> None:
        inside.set()
        await anyio.sleep_forever()

    runner = ToolRunner(registry_with(broken), state=make_state(tmp_path), hooks=hooks)
    result = await cut_when(runner, call("c1", "broken"), inside)
    assert (result.text, result.is_error, result.synthetic) == (
        "disk full",
        True,
        False,
    )
    assert result.context_modifier is not None
    result.context_modifier()
    assert applied == ["x"]


@pytest.mark.anyio
async def test_a_hook_that_never_returns_is_stopped_at_the_hook_timeout(
    tmp_path: Path, virtual_time: bool
) -> None:
    """No hook can hang a call: past `Hooks(timeout=)` it counts as a hook that raised."""
    limit = 30.0 if virtual_time else 0.05
    hooks = Hooks(timeout=limit)
    ran: list[str] = []

    @tool
    async def work() -> str:
        """Would work."""
        ran.append("x")
        return "done"

    @hooks.pre_tool_use
    async def stuck(data: PreToolUseInput) -> None:
        await anyio.sleep_forever()

    @hooks.stop
    async def stuck_stop(data: StopInput) -> None:
        await anyio.sleep_forever()

    runner = ToolRunner(registry_with(work), state=make_state(tmp_path), hooks=hooks)
    with anyio.fail_after(limit * 20):
        result = await runner(call("c1", "work"))
        assert await hooks.run_stop_hooks(StopInput(output="x")) is None
    assert result.is_error and ran == []
    assert "stuck failed: TimeoutError" in result.text
    assert f"within {limit:g} s" in result.text


def test_a_hook_timeout_must_be_positive_or_none() -> None:
    assert Hooks(timeout=None).timeout is None
    assert Hooks().timeout == 60.0
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="timeout"):
            Hooks(timeout=bad)
