"""Running one call's PreToolUse, PostToolUse and PostToolUseFailure hooks."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from ..messages import ToolCall, ToolResult
from ._decision import HookVerdict
from ._hooks import (
    PostToolUseDecision,
    PostToolUseFailureHook,
    PostToolUseFailureInput,
    PostToolUseHook,
    PostToolUseInput,
    PreToolUseDecision,
    PreToolUseHook,
    PreToolUseInput,
    call_hook,
    hook_name,
)
from ._signals import CallFailed, SignalCollector

__all__ = ["run_failure_hooks", "run_post_hooks", "run_pre_hooks"]

logger = logging.getLogger("toolweave.execution")

_T = TypeVar("_T")
_D = TypeVar("_D")
_RANK = {"allow": 0, "ask": 1, "deny": 2}


async def _decision(
    stage: str, fn: Callable[[_D], object], data: _D, expected: type[_T], call_id: str
) -> _T | None:
    """Call one hook; a raise or a wrong return type fails the call (logged)."""
    name = hook_name(fn)
    try:
        out = await call_hook(fn, data)
    except Exception as exc:
        logger.exception("%s hook %s raised on call %s", stage, name, call_id)
        message = f"{stage} hook {name} failed: {type(exc).__name__}: {exc}"
        raise CallFailed(message, warning=message) from exc
    if out is None or isinstance(out, expected):
        return out
    logger.error("%s hook %s returned %r on call %s", stage, name, out, call_id)
    message = (
        f"{stage} hook {name} returned {type(out).__name__},"
        f" expected {expected.__name__} or None"
    )
    raise CallFailed(message, warning=message)


def _stricter(current: HookVerdict | None, new: HookVerdict) -> HookVerdict:
    if current is None or _RANK[new.behavior] > _RANK[current.behavior]:
        return new
    return current


async def run_pre_hooks(
    hooks: tuple[PreToolUseHook, ...],
    call: ToolCall,
    tool_name: str,
    args: dict[str, object],
    *,
    signals: SignalCollector,
    revalidate: Callable[[Mapping[str, object]], Awaitable[dict[str, object]]],
) -> tuple[dict[str, object], HookVerdict | None]:
    """Run PreToolUse hooks in order; return the (maybe rewritten) input and verdict.

    Each hook sees the input as left by the one before. A rewrite is validated
    again by `revalidate` (which raises `CallFailed` if it is invalid). The
    verdict is the strictest permission any hook gave (deny > ask > allow).
    Context and stop requests are recorded in `signals` as they are made.
    """
    verdict: HookVerdict | None = None
    for fn in hooks:
        data = PreToolUseInput(call=call, tool_name=tool_name, input=args)
        decision = await _decision("PreToolUse", fn, data, PreToolUseDecision, call.id)
        if decision is None:
            continue
        if decision.additional_context:
            signals.add_context(call.ref, decision.additional_context)
        if decision.prevent_continuation:
            reason = (
                decision.stop_reason
                or f"a PreToolUse hook on {tool_name} stopped the run"
            )
            signals.add_stop(call.ref, reason)
        if decision.permission is not None:
            verdict = _stricter(
                verdict, HookVerdict(decision.permission, decision.reason)
            )
        if decision.updated_input is not None:
            args = await revalidate(decision.updated_input)
    return args, verdict


def _record(
    decision: PostToolUseDecision,
    call_id: str,
    tool_name: str,
    signals: SignalCollector,
) -> None:
    if decision.additional_context:
        signals.add_context(call_id, decision.additional_context)
    if decision.prevent_continuation:
        reason = (
            decision.stop_reason or f"a PostToolUse hook on {tool_name} stopped the run"
        )
        signals.add_stop(call_id, reason)


async def run_post_hooks(
    hooks: tuple[PostToolUseHook, ...],
    data: PostToolUseInput,
    *,
    signals: SignalCollector,
    replace: Callable[[object], Awaitable[ToolResult]] | None,
    warn: Callable[[str], None],
) -> ToolResult:
    """Run PostToolUse hooks in order and return the final result.

    A ``replace_output`` is applied through `replace` (which maps and persists
    it) when the tool allows it; later hooks see the replaced result. When the
    tool does not allow it (`replace` is None) it is ignored and `warn` called.
    """
    result = data.result
    for fn in hooks:
        step = PostToolUseInput(
            call=data.call,
            tool_name=data.tool_name,
            input=data.input,
            output=data.output,
            result=result,
        )
        decision = await _decision(
            "PostToolUse", fn, step, PostToolUseDecision, data.call.id
        )
        if decision is None:
            continue
        _record(decision, data.call.ref, data.tool_name, signals)
        if decision.replace_output is None:
            continue
        if replace is None:
            warn(
                f"PostToolUse hook {hook_name(fn)} tried to replace the output of"
                f" {data.tool_name}, which does not declare replaceable_output; ignored"
            )
            continue
        result = await replace(decision.replace_output)
    return result


async def run_failure_hooks(
    hooks: tuple[PostToolUseFailureHook, ...],
    data: PostToolUseFailureInput,
    *,
    signals: SignalCollector,
) -> None:
    """Run PostToolUseFailure hooks in order (``replace_output`` is ignored)."""
    for fn in hooks:
        decision = await _decision(
            "PostToolUseFailure", fn, data, PostToolUseDecision, data.call.id
        )
        if decision is not None:
            _record(decision, data.call.ref, data.tool_name, signals)
