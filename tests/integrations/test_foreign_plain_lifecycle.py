"""A framework's calls take the runner's plain path when no stage can act; same answers.

`ForeignScheduler` runs every call through its `ToolRunner`; with no hooks,
permission rules or mode, audit or timeout, the runner's plan for each
stand-in is its plain path. Each case of the table below runs through the
plain path and through the staged chain (forced by a permission mode whose
stage allows everything, or by the audit in warn mode, neither of which
changes an answer) and must give the same outcomes, in call order, and
raise the same passthrough exception.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio.lowlevel
import pytest

from toolweave import StopRun
from toolweave.events import Event
from toolweave.execution import (
    Hooks,
    PermissionMode,
    PreToolUseDecision,
    PreToolUseInput,
    _runner,
)
from toolweave.integrations._declaration import Declaration
from toolweave.integrations._foreign import ForeignScheduler, Outcome, Raised
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import Concurrency

pytestmark = pytest.mark.anyio


class Bubble(Exception):
    """A framework's control flow (a passthrough type)."""


async def _work(how: str) -> str:
    await anyio.lowlevel.checkpoint()
    if how == "self-cancel":  # the tool's own CancelledError: nothing cancelled it
        raise asyncio.CancelledError
    if how == "bubble":
        raise Bubble("interrupt")
    if how.startswith("raise"):
        raise ValueError(how)
    return {
        "blank": "  \n",
        "empty": "",
        "surrogate": "bad \udcff byte",
        "accented": "héllo",
        "error": "ERROR: handled",
        "empty error": "ERROR:",
    }.get(how, f"done {how}")


def _invoke(index: int, args: Mapping[str, Any]) -> Awaitable[str]:
    return _work(str(args["how"]))


def _describe(value: str) -> str | Raised:
    if value.startswith("ERROR:"):
        return Raised(value.removeprefix("ERROR:"))
    return value


def _recover(index: int, exc: Exception) -> str:
    if str(exc) == "raise in recover":
        raise Bubble("from recover") from exc
    if str(exc) == "raise a bug":
        raise KeyError("recover has a bug") from exc
    if str(exc) == "raise a stop":
        raise StopRun("stop here") from exc
    return f"ERROR: recovered {exc}"


def _scheduler(**options: Any) -> ForeignScheduler:
    return ForeignScheduler({"t": Declaration(concurrency=Concurrency.SAFE)}, **options)


CASES = [
    "ok",
    "blank",
    "empty",
    "surrogate",
    "accented",
    "error",
    "empty error",
    "raise value",
    "raise in recover",
    "raise a bug",
    "raise a stop",
    "bubble",
    "self-cancel",
]


async def _outcomes(
    scheduler: ForeignScheduler,
    hows: list[str],
    args: Callable[[str], Mapping[str, Any]] = lambda how: {"how": how},
) -> tuple[list[Outcome[str]] | None, BaseException | None]:
    calls = [
        (f"c{i}", "t" if h != "undeclared" else "u", args(h))
        for i, h in enumerate(hows)
    ]
    try:
        outcomes = await scheduler.run(
            calls, _invoke, _describe, passthrough=(Bubble,), recover=_recover
        )
    except (Bubble, asyncio.CancelledError) as exc:  # re-raised after the batch
        return None, exc
    return outcomes, None


def _seen(events: list[Event]) -> Callable[[Event], None]:
    return events.append


STAGED: dict[str, dict[str, Any]] = {
    "bypass mode (the permission stage)": {"mode": PermissionMode.BYPASS},
    "audit warn": {"audit": "warn"},
}


@pytest.fixture
def staged_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of calls the runners ran through the staged chain."""
    seen: list[str] = []
    run_staged = _runner.run_staged

    async def spy(lc: Any, plan: Any, call: ToolCall) -> ToolResult:
        seen.append(call.id)
        return await run_staged(lc, plan, call)

    monkeypatch.setattr(_runner, "run_staged", spy)
    return seen


@pytest.mark.parametrize("how", CASES)
@pytest.mark.parametrize("staged", list(STAGED))
async def test_each_case_alone_answers_as_the_staged_chain_does(
    how: str, staged: str, staged_calls: list[str]
) -> None:
    events: list[Event] = []
    plain = await _outcomes(_scheduler(on_event=_seen(events)), [how, "ok"])
    assert events, "a listener keeps the plain path"
    assert staged_calls == []
    full = await _outcomes(_scheduler(**STAGED[staged]), [how, "ok"])
    assert staged_calls, "the option forces the staged chain"
    assert _comparable(plain) == _comparable(full)


async def test_the_whole_table_in_one_batch_answers_as_the_staged_chain_does(
    staged_calls: list[str],
) -> None:
    hows = [h for h in CASES if h not in ("bubble", "raise in recover", "self-cancel")]
    plain, _ = await _outcomes(_scheduler(), hows)
    assert staged_calls == [], "no stage can act: every call took the plain path"
    full, _ = await _outcomes(_scheduler(mode=PermissionMode.BYPASS), hows)
    assert len(staged_calls) == len(hows)
    assert plain is not None
    assert _comparable((plain, None)) == _comparable((full, None))
    texts = [o.result.text for o in plain]
    assert texts[hows.index("blank")] == "(t completed with no output)"
    assert texts[hows.index("empty error")] == "ToolError"
    assert "\udcff" not in texts[hows.index("surrogate")]
    assert texts[hows.index("raise a stop")] == "stop here"


@pytest.mark.parametrize(
    "options", [{}, {"mode": PermissionMode.BYPASS}], ids=["plain", "staged"]
)
async def test_a_tools_own_cancelled_error_reaches_the_framework(
    options: dict[str, Any],
) -> None:
    """Re-raised as itself after every sibling finished, on both paths.

    Each framework answers a tool that raises CancelledError in its own way (the
    Agents SDK's failure function, ToolNode failing the graph, PydanticAI
    aborting); toolweave's "raised by the tool itself" would stand in for it.
    """
    finished: list[str] = []

    async def invoke(index: int, args: Mapping[str, Any]) -> str:
        how = str(args["how"])
        if how == "ok":
            await anyio.sleep(0.01)  # still running when the sibling raises
        value = await _work(how)
        finished.append(how)
        return value

    outcomes, raised = None, None
    try:
        outcomes = await _scheduler(**options).run(
            [("c0", "t", {"how": "self-cancel"}), ("c1", "t", {"how": "ok"})],
            invoke,
            _describe,
            recover=_recover,
        )
    except asyncio.CancelledError as exc:
        raised = exc
    assert outcomes is None
    assert type(raised) is asyncio.CancelledError
    assert finished == ["ok"], "the sibling ran to its end first"


async def test_arguments_that_are_not_a_dict_answer_alike_on_both_paths() -> None:
    # (the stand-in copies them into a dict on either path)
    frozen = await _outcomes(
        _scheduler(), ["ok", "error"], lambda how: types.MappingProxyType({"how": how})
    )
    full = await _outcomes(
        _scheduler(mode=PermissionMode.BYPASS),
        ["ok", "error"],
        lambda how: types.MappingProxyType({"how": how}),
    )
    assert _comparable(frozen) == _comparable(full)


async def test_an_undeclared_tool_in_the_batch_answers_as_the_runner_does() -> None:
    plain = await _outcomes(_scheduler(), ["ok", "undeclared", "ok"])
    full = await _outcomes(
        _scheduler(mode=PermissionMode.BYPASS), ["ok", "undeclared", "ok"]
    )
    assert _comparable(plain) == _comparable(full)


async def test_a_stage_that_can_act_is_never_skipped(staged_calls: list[str]) -> None:
    """A hook or a timeout takes the staged chain: its stage acts."""

    hooks = Hooks()

    @hooks.pre_tool_use("t")
    def deny(data: PreToolUseInput) -> PreToolUseDecision:
        return PreToolUseDecision(permission="deny", reason="no")

    [outcome] = (await _outcomes(_scheduler(hooks=hooks), ["ok"]))[0] or []
    assert not outcome.ran
    assert "no" in outcome.result.text
    assert staged_calls == ["c0"]

    timed = ForeignScheduler(
        {"t": Declaration(concurrency=Concurrency.SAFE, timeout=0.001)}
    )
    slow = await timed.run(
        [("c0", "t", {"how": "ok"})],
        lambda i, a: _sleep_forever(),
        _describe,
        recover=_recover,
    )
    assert slow[0].result.is_error
    assert "timed out" in slow[0].result.text.lower()
    assert staged_calls == ["c0", "c0"]


async def _sleep_forever() -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def _comparable(
    run: tuple[list[Outcome[str]] | None, BaseException | None],
) -> tuple[object, object]:
    outcomes, raised = run
    seen = (
        None
        if outcomes is None
        else [
            (o.value, o.ran, o.result.content, o.result.is_error, o.result.call_id)
            for o in outcomes
        ]
    )
    return seen, None if raised is None else (type(raised), str(raised))
