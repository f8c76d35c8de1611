"""The permission stage: gather the inputs, decide, and resolve an ask."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal, TypeAlias

import anyio

from ..events import Event, PermissionAnswered, PermissionAsked
from ..messages import ToolCall
from ..scheduling import InterruptToken
from ..tools import PermissionCheck, SessionState, Tool, ToolContext
from ..tools.builtin import ShellCommand
from ._decision import (
    CallKind,
    HookVerdict,
    PermissionDecision,
    PermissionMode,
    classify_call,
    decide_permission,
)
from ._execute import emit_safely
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


@dataclass(frozen=True, slots=True)
class _Asked:
    """An ask decision and what is needed to resolve it or explain a denial."""

    decision: PermissionDecision
    check: PermissionCheck
    kind: CallKind
    tool: str
    subject: str | PurePath | None
    edit_without_workspace: bool = False
    """ACCEPT_EDITS would have approved it, but no workspace is set to judge edits by."""

    def key(self) -> _ALWAYS_KEY:
        """What an "always" answer approves: the tool's rules, else tool + subject."""
        if self.decision.source == "tool" and self.check.rules:
            return ("", "\n".join(self.check.rules))
        return (self.tool, None if self.subject is None else str(self.subject))


def _suggested_rules(asked: _Asked) -> tuple[str, ...]:
    """The tool's rules, else one naming the tool and its subject.

    A shell command gets none of its own making: a bash rule matches the
    commands inside the input, which only the tool can name.
    """
    if asked.check.rules:
        return asked.check.rules
    subject = asked.subject
    if subject is None:
        return (asked.tool,)
    if isinstance(subject, ShellCommand):
        return ()
    if isinstance(subject, PurePath):
        return (f"{asked.tool}(/{subject.as_posix()})",)
    return (f"{asked.tool}({subject})",)


def _unattended_denial(asked: _Asked) -> str:
    """Why an ask was denied with nobody to ask, and which setting would allow it.

    The settings are named both as the CLI and toolweave.toml spell them and as
    the library does, since this text reaches both kinds of user.
    """
    decision = asked.decision
    head = (
        f"Permission denied: approval is required ({decision.reason}), and there"
        " is no one to ask (no terminal, no ask handler)."
    )
    if decision.source == "rule":
        return (
            f"{head} An ask rule always asks: remove it from permissions.ask to"
            " run such calls unattended."
        )
    if decision.source == "hook":
        return f"{head} A PreToolUse hook asked; only that hook can allow it."
    rules = ", ".join(json.dumps(r) for r in _suggested_rules(asked))
    ways = []
    if rules:
        ways.append(
            f"the allow rule permissions.allow = [{rules}] (toolweave.toml, or"
            " AgentConfig(permissions=PermissionRules(allow=[...])))"
        )
    if asked.edit_without_workspace:
        ways.insert(
            0,
            "a workspace for accept_edits to judge edits by (the permission mode is"
            " accept_edits, which approves edits inside the workspace, and no"
            " workspace is set: AgentConfig(workspace=Path(...)); the CLI uses its"
            " working directory)",
        )
    elif asked.kind is CallKind.EDIT:
        ways.append(
            '--permission-mode accept_edits (mode = "accept_edits" in'
            " toolweave.toml, or AgentConfig(permission_mode=PermissionMode.ACCEPT_EDITS))"
        )
    if not ways:
        return (
            f"{head} No allow rule can cover it; approve it at a terminal, or use"
            " --permission-mode bypass (AgentConfig(permission_mode=...))."
        )
    return f"{head} To allow it without asking, use " + ", or ".join(ways) + "."


def _has_own_check(tool: Tool) -> bool:
    return type(tool).check_permissions is not Tool.check_permissions


def _not_asked(tool: str) -> CallFailed:
    """The answer to a call whose wait for permission was cut: it never started."""
    return CallFailed(
        "Not run: the run was stopped while this call waited for permission."
        f" The tool {tool!r} was never started.",
        synthetic=True,
    )


_COVERED = object()
"""`PermissionGate._answer`'s answer when an "always" given meanwhile covered the call
(a sentinel: no handler's answer can be mistaken for it)."""


def _told(answer: object) -> str:
    """What a `PermissionAnswered` says of the handler's `answer`."""
    if answer is _COVERED:
        return "approved"
    if isinstance(answer, str) and answer in ("allow", "deny", "always"):
        return answer
    return "failed"


class PermissionGate:
    """Runs the permission stage for one runner; remembers "always" answers.

    Ask handler calls are serialized (one question at a time, in the order
    calls reach this stage) under an anyio Lock; an approval given while a
    call waited is honoured without asking again. Once `halt` is set (the
    run was interrupted or stopped) no question is asked any more and every
    call waiting for one (asked, or waiting for its turn) is answered "not
    run"; so is a call cancelled while it waits. The tool never started, so
    that is what its result says.

    Every wait for an answer is told to `on_event`: `PermissionAsked` when
    the call is handed to the ask stage (before it waits its turn), then
    `PermissionAnswered` however the wait ends (answer, failure, halt,
    cancel), so timings can show the wait as the user's and leave it out.
    A call reaching the stage after the halt is answered without either.
    """

    def __init__(
        self,
        rules: PermissionRules | None,
        mode: PermissionMode,
        ask: AskHandler | None,
        state: SessionState,
        *,
        on_event: Callable[[Event], None] | None = None,
        halt: InterruptToken | None = None,
    ) -> None:
        self._on_event = on_event
        self._rules = rules
        self._mode = mode
        self._open = not rules and mode is PermissionMode.DEFAULT
        self._ask = ask
        self._state = state
        self._halt = halt
        self._always: set[_ALWAYS_KEY] = set()
        self._lock: anyio.Lock | None = None

    @property
    def rules(self) -> PermissionRules | None:
        """The configured rules."""
        return self._rules

    @rules.setter
    def rules(self, rules: PermissionRules | None) -> None:
        self._rules = rules
        self._open = not rules and self._mode is PermissionMode.DEFAULT

    @property
    def mode(self) -> PermissionMode:
        """The permission mode."""
        return self._mode

    @mode.setter
    def mode(self, mode: PermissionMode) -> None:
        self._mode = mode
        self._open = not self._rules and mode is PermissionMode.DEFAULT

    def allows_at_once(self, tool: Tool, verdict: HookVerdict | None) -> bool:
        """True when nothing could say anything but allow (the hot path: no await needed)."""
        return verdict is None and self._open and not _has_own_check(tool)

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
        if self.allows_at_once(tool, verdict):
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
        unjudged = False
        if self.mode is not PermissionMode.BYPASS:
            access = tool.access_for(args)
            kind = classify_call(access, workspace)
            unjudged = (
                self.mode is PermissionMode.ACCEPT_EDITS
                and workspace is None
                and access is not None
                and bool(access.writes)
                and all(k.startswith("fs:/") for k in access.writes)
            )
        decision = decide_permission(
            rule=rule, hook=verdict, check=check, mode=self.mode, kind=kind
        )
        if decision.behavior == "deny":
            raise CallFailed(f"Permission denied: {decision.reason}")
        if decision.behavior == "ask":
            asked = _Asked(decision, check, kind, tool.name, subject, unjudged)
            await self._resolve_ask(call, asked)

    def _emit(self, event: Event) -> None:
        if self._on_event is not None:
            emit_safely(self._on_event, event)

    async def _resolve_ask(self, call: ToolCall, asked: _Asked) -> None:
        """Ask (one question at a time); the wait is told by PermissionAsked/Answered."""
        key = asked.key()
        if key in self._always:
            return
        if self._ask is None:
            raise CallFailed(_unattended_denial(asked))
        if self._halt is not None and self._halt.is_set():
            raise _not_asked(asked.tool)  # nothing is asked once the run stopped
        self._emit(
            PermissionAsked(call.id, asked.tool, asked.decision.reason, key=call.key)
        )
        told = "cancelled"
        try:
            answer = await self._answer(self._ask, call, asked, key)
            told = _told(answer)
        except CallFailed as failed:
            told = "cancelled" if failed.synthetic else "failed"
            raise
        finally:
            self._emit(PermissionAnswered(call.id, told, key=call.key))
        self._apply(answer, key, asked)

    def _apply(self, answer: object, key: _ALWAYS_KEY, asked: _Asked) -> None:
        """Remember an "always"; raise `CallFailed` for anything but an approval."""
        if answer is _COVERED:
            return
        if answer == "always":
            self._always.add(key)
        elif answer == "deny":
            raise CallFailed(f"Permission denied by the user: {asked.decision.reason}")
        elif answer != "allow":
            raise CallFailed(f"Permission denied: the ask handler answered {answer!r}")

    async def _answer(
        self, ask: AskHandler, call: ToolCall, asked: _Asked, key: _ALWAYS_KEY
    ) -> object:
        """The ask handler's answer (`_COVERED` if an "always" came first); one ask at a time.

        Raises the "not run" `CallFailed` when the halt fires or the call is
        cancelled while it waits (level-triggered: an outer cancel fires again
        at the caller's next checkpoint, so nothing is swallowed for good).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        answer: object = None
        with anyio.CancelScope() as waiting:
            unsubscribe = (
                None if self._halt is None else self._halt.subscribe(waiting.cancel)
            )
            try:
                async with self._lock:
                    if key in self._always:
                        return _COVERED
                    try:
                        answer = await ask(call, asked.decision.reason)
                    except Exception as exc:
                        logger.exception("ask handler failed on call %s", call.id)
                        raise CallFailed(
                            "Permission denied: the ask handler failed"
                            f" ({type(exc).__name__}: {exc})"
                        ) from exc
            except anyio.get_cancelled_exc_class():
                # The halt, or the call cancelled (or both): it never started.
                raise _not_asked(asked.tool) from None
            finally:
                if unsubscribe is not None:
                    unsubscribe()
        if waiting.cancel_called:  # halted, even if an answer came at the same time
            raise _not_asked(asked.tool)
        return answer
