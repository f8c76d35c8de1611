"""The permission stage: gather the inputs, decide, and resolve an ask."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import PurePath
from typing import Literal, TypeAlias

import anyio

from ..messages import ToolCall
from ..tools import PermissionCheck, SessionState, Tool, ToolContext
from ._decision import (
    CallKind,
    HookVerdict,
    PermissionDecision,
    PermissionMode,
    classify_call,
    decide_permission,
)
from ._rules import PermissionRules
from ._signals import CallFailed

__all__ = ["AskAnswer", "AskHandler", "PermissionGate"]

logger = logging.getLogger("toolweave.execution")

AskAnswer: TypeAlias = Literal["allow", "deny", "always"]
"""An ask handler's answer; "always" also approves the same tool and subject from now on."""
AskHandler: TypeAlias = Callable[[ToolCall, str], Awaitable[AskAnswer]]
"""``async (call, reason) -> "allow" | "deny" | "always"``."""

_PASSTHROUGH = PermissionCheck()
_ALWAYS_KEY: TypeAlias = tuple[str, str | None]


def _has_own_check(tool: Tool) -> bool:
    return type(tool).check_permissions is not Tool.check_permissions


class PermissionGate:
    """Runs the permission stage for one runner; remembers "always" answers.

    Ask handler calls are serialized (one question at a time, in the order
    calls reach this stage) under an anyio Lock; an approval given while a
    call waited is honoured without asking again.
    """

    def __init__(
        self,
        rules: PermissionRules | None,
        mode: PermissionMode,
        ask: AskHandler | None,
        state: SessionState,
    ) -> None:
        self.rules = rules
        self.mode = mode
        self._ask = ask
        self._state = state
        self._always: set[_ALWAYS_KEY] = set()
        self._lock: anyio.Lock | None = None

    def _trivial(self, tool: Tool, verdict: HookVerdict | None) -> bool:
        """True when nothing could say anything but allow (the hot path)."""
        return (
            verdict is None
            and not self.rules
            and self.mode is PermissionMode.DEFAULT
            and not _has_own_check(tool)
        )

    async def authorize(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        ctx: ToolContext,
        verdict: HookVerdict | None,
    ) -> None:
        """Return if the call may run; raise `CallFailed` saying why not.

        Checkpoints: the tool's `check_permissions` and the ask handler.
        """
        if self._trivial(tool, verdict):
            return
        try:
            subject = tool.permission_subject(args)
            check = (
                await tool.check_permissions(args, ctx)
                if _has_own_check(tool)
                else _PASSTHROUGH
            )
        except Exception as exc:
            logger.exception("permission check of %s failed", tool.name)
            raise CallFailed(
                f"Permission check failed: {type(exc).__name__}: {exc}"
            ) from exc
        workspace = self._state.workspace
        names = (tool.name, *tool.aliases)
        rule = (
            self.rules.match(names, subject, workspace=workspace)
            if self.rules
            else None
        )
        kind = CallKind.OTHER
        if self.mode in (PermissionMode.PLAN, PermissionMode.ACCEPT_EDITS):
            kind = classify_call(tool.access_for(args), workspace)
        decision = decide_permission(
            rule=rule, hook=verdict, check=check, mode=self.mode, kind=kind
        )
        if decision.behavior == "deny":
            raise CallFailed(f"Permission denied: {decision.reason}")
        if decision.behavior == "ask":
            await self._resolve_ask(call, tool, subject, decision)

    async def _resolve_ask(
        self,
        call: ToolCall,
        tool: Tool,
        subject: str | PurePath | None,
        decision: PermissionDecision,
    ) -> None:
        key = (tool.name, None if subject is None else str(subject))
        if key in self._always:
            return
        if self._ask is None:
            raise CallFailed(
                f"Permission denied: approval is required ({decision.reason}),"
                " and no ask handler is configured."
            )
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if key in self._always:
                return
            try:
                answer: object = await self._ask(call, decision.reason)
            except Exception as exc:
                logger.exception("ask handler failed on call %s", call.id)
                raise CallFailed(
                    f"Permission denied: the ask handler failed ({type(exc).__name__}: {exc})"
                ) from exc
        if answer == "always":
            self._always.add(key)
        elif answer == "deny":
            raise CallFailed(f"Permission denied by the user: {decision.reason}")
        elif answer != "allow":
            raise CallFailed(f"Permission denied: the ask handler answered {answer!r}")
