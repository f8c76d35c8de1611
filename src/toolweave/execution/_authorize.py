"""The permission stage: gather the inputs, decide, and resolve an ask."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal, NoReturn, TypeAlias

import anyio

from ..events import Event, PermissionAnswered, PermissionAsked
from ..messages import ToolCall
from ..scheduling import InterruptToken
from ..tools import Access, PermissionCheck, SessionState, Tool, ToolContext
from ._asked import (
    ALWAYS_KEY,
    Asked,
    not_asked,
    pending_approval,
    suspended_answer,
    unattended_denial,
)
from ._decision import (
    CallKind,
    HookVerdict,
    PermissionMode,
    classify_call,
    decide_permission,
)
from ._execute import emit_safely
from ._rules import PermissionRules
from ._signals import CallFailed
from ._suspend import SuspendPoint

__all__ = ["AskAnswer", "AskHandler", "PermissionGate"]

logger = logging.getLogger("toolweave.execution")

AskAnswer: TypeAlias = Literal["allow", "deny", "always"]
"""An ask handler's answer; "always" also approves the same tool and subject from now on."""
AskHandler: TypeAlias = Callable[[ToolCall, str], Awaitable[AskAnswer]]
"""``async (call, reason) -> "allow" | "deny" | "always"``."""

_PASSTHROUGH = PermissionCheck()


def _edits_files(access: Access | None) -> bool:
    """True if `access` writes files only (an edit accept_edits could judge)."""
    return (
        access is not None
        and bool(access.writes)
        and all(k.startswith("fs:/") for k in access.writes)
    )


def _has_own_check(tool: Tool) -> bool:
    return type(tool).check_permissions is not Tool.check_permissions


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

    `suspend` (the run's `SuspendPoint`): a call its resume decided is answered
    by that decision instead of asking; with no ask handler and the point
    enabled, an ask makes the call pending (`PermissionAnswered` says
    ``"suspended"``) instead of denied. Its "always" approvals are the gate's
    from the start.
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
        suspend: SuspendPoint | None = None,
    ) -> None:
        self._on_event = on_event
        self._suspend = suspend
        self._rules = rules
        self._mode = mode
        self._open = not rules and mode is PermissionMode.DEFAULT
        self._ask = ask
        self._state = state
        self._halt = halt
        self._always: set[ALWAYS_KEY] = set(suspend.always if suspend else ())
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
    def always(self) -> tuple[ALWAYS_KEY, ...]:
        """The "always" approvals given so far (what a suspension carries on), sorted."""
        return tuple(sorted(self._always, key=lambda k: (k[0], k[1] or "")))

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
        kind, unjudged = self._kind(tool, args)
        decision = decide_permission(
            rule=rule, hook=verdict, check=check, mode=self.mode, kind=kind
        )
        if decision.behavior == "deny":
            raise CallFailed(f"Permission denied: {decision.reason}")
        if decision.behavior == "ask":
            asked = Asked(decision, check, kind, tool.name, subject, unjudged)
            await self._resolve_ask(call, asked)

    def _kind(self, tool: Tool, args: dict[str, object]) -> tuple[CallKind, bool]:
        """What the call is to the mode, and whether accept_edits lacks a workspace for it."""
        if self.mode is PermissionMode.BYPASS:
            return CallKind.OTHER, False
        workspace = self._state.workspace
        access = tool.access_for(args)
        unjudged = (
            self.mode is PermissionMode.ACCEPT_EDITS
            and workspace is None
            and _edits_files(access)
        )
        return classify_call(access, workspace), unjudged

    def _emit(self, event: Event) -> None:
        if self._on_event is not None:
            emit_safely(self._on_event, event)

    async def _resolve_ask(self, call: ToolCall, asked: Asked) -> None:
        """Ask (one question at a time); the wait is told by PermissionAsked/Answered."""
        key = asked.key()
        point = self._suspend
        # a person's decision on this very call wins over an "always" on another
        if point is not None and self._decided(point, call, asked, key):
            return
        if key in self._always:
            return
        if self._ask is None:
            if point is None or not point.enabled:
                raise CallFailed(unattended_denial(asked))
            await self._wait_for_a_person(point, call, asked)
        if self._halt is not None and self._halt.is_set():
            raise not_asked(asked.tool)  # nothing is asked once the run stopped
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

    async def _wait_for_a_person(
        self, point: SuspendPoint, call: ToolCall, asked: Asked
    ) -> NoReturn:
        """Make the call pending until the batch suspends; raise its placeholder answer.

        Cut while it waits (the halt, or the call cancelled), it is answered
        "not run" instead and waits no more.
        """
        if self._halt is not None and self._halt.is_set():
            raise not_asked(asked.tool)
        self._emit(
            PermissionAsked(call.id, asked.tool, asked.decision.reason, key=call.key)
        )
        suspended = await point.wait(pending_approval(call, asked), self._halt)
        told = "suspended" if suspended else "cancelled"
        self._emit(PermissionAnswered(call.id, told, key=call.key))
        raise suspended_answer(asked.tool) if suspended else not_asked(asked.tool)

    def _decided(
        self, point: SuspendPoint, call: ToolCall, asked: Asked, key: ALWAYS_KEY
    ) -> bool:
        """Answer the ask with the resume's decision for `call`; False if none was given.

        Raises `CallFailed` for a denial (and "not run" once the run halted).
        """
        decision = point.decision(call)
        if decision is None:
            return False
        if self._halt is not None and self._halt.is_set():
            raise not_asked(asked.tool)
        self._emit(
            PermissionAsked(call.id, asked.tool, asked.decision.reason, key=call.key)
        )
        self._emit(PermissionAnswered(call.id, decision, key=call.key))
        self._apply(decision, key, asked)
        return True

    def _apply(self, answer: object, key: ALWAYS_KEY, asked: Asked) -> None:
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
        self, ask: AskHandler, call: ToolCall, asked: Asked, key: ALWAYS_KEY
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
                raise not_asked(asked.tool) from None
            finally:
                if unsubscribe is not None:
                    unsubscribe()
        if waiting.cancel_called:  # halted, even if an answer came at the same time
            raise not_asked(asked.tool)
        return answer
