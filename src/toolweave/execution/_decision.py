"""The permission decision: one pure function over rule, hook, mode and tool check."""

from __future__ import annotations

import enum
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias, final

from ..tools import Access, PermissionCheck
from ._hooks import HookPermission
from ._rules import RuleVerdict

__all__ = [
    "CallKind",
    "DecisionSource",
    "HookVerdict",
    "PermissionDecision",
    "PermissionMode",
    "classify_call",
    "decide_permission",
]

DecisionSource: TypeAlias = Literal["rule", "hook", "tool", "mode", "default"]


class PermissionMode(enum.Enum):
    """How much the runner lets through without asking (Claude Code's modes).

    Configured deny and ask rules hold in every mode.

    DEFAULT: calls run unless a rule, a hook or the tool itself denies or asks.
    ACCEPT_EDITS: as DEFAULT, but a tool's own *ask* is approved for file edits
        (calls whose declared `Access` writes only ``fs:`` keys inside the workspace).
    BYPASS: every ask except an ask *rule* is approved; denials still hold.
    PLAN: read-only calls only (declared `Access` with no writes); anything
        else is denied. Read-only calls then follow DEFAULT.
    """

    DEFAULT = "default"
    ACCEPT_EDITS = "accept_edits"
    BYPASS = "bypass"
    PLAN = "plan"


class CallKind(enum.Enum):
    """What a call does to shared state, judged from its declared `Access`."""

    READ_ONLY = "read_only"
    """Declared access that writes nothing."""
    EDIT = "edit"
    """Declared access that writes only files inside the workspace."""
    OTHER = "other"
    """Anything else, including undeclared access (fail closed)."""


def _inside(key: str, root: str) -> bool:
    path = posixpath.normpath(key[3:])
    return path == root or path.startswith(root.rstrip("/") + "/")


def classify_call(access: Access | None, workspace: Path | None) -> CallKind:
    """Classify a call by its declared access; undeclared is OTHER. Pure."""
    if access is None:
        return CallKind.OTHER
    if not access.writes:
        return CallKind.READ_ONLY
    if workspace is None:
        return CallKind.OTHER
    root = posixpath.normpath(os.path.abspath(workspace))
    if all(k.startswith("fs:/") and _inside(k, root) for k in access.writes):
        return CallKind.EDIT
    return CallKind.OTHER


@final
@dataclass(frozen=True, slots=True)
class HookVerdict:
    """The combined permission opinion of a call's PreToolUse hooks."""

    behavior: HookPermission
    """deny beats ask beats allow across the hooks of one call."""
    reason: str = ""
    """Why, as the hook said."""


@final
@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """What `decide_permission` concluded, and who decided it."""

    behavior: Literal["allow", "ask", "deny"]
    """ask means: consult the ask handler (none configured = deny)."""
    source: DecisionSource
    """Which input decided."""
    reason: str
    """Why, in words for the model (deny) or the user (ask)."""


def _deny(
    rule: RuleVerdict | None,
    hook: HookVerdict | None,
    check: PermissionCheck,
    mode: PermissionMode,
    kind: CallKind,
) -> PermissionDecision | None:
    if rule is not None and rule.behavior == "deny":
        return PermissionDecision("deny", "rule", f"denied by rule {rule.rule}")
    if hook is not None and hook.behavior == "deny":
        return PermissionDecision("deny", "hook", hook.reason or "denied by a hook")
    if check.behavior == "deny":
        return PermissionDecision("deny", "tool", check.message or "denied by the tool")
    if mode is PermissionMode.PLAN and kind is not CallKind.READ_ONLY:
        reason = "plan mode allows only read-only calls"
        return PermissionDecision("deny", "mode", reason)
    return None


def _approval(
    hook: HookVerdict | None, rule: RuleVerdict | None
) -> PermissionDecision | None:
    """An approval given in advance: a hook's allow, else an allow rule."""
    if hook is not None and hook.behavior == "allow":
        return PermissionDecision("allow", "hook", hook.reason or "allowed by a hook")
    if rule is not None and rule.behavior == "allow":
        return PermissionDecision("allow", "rule", f"allowed by rule {rule.rule}")
    return None


def decide_permission(
    *,
    rule: RuleVerdict | None,
    hook: HookVerdict | None,
    check: PermissionCheck,
    mode: PermissionMode,
    kind: CallKind,
) -> PermissionDecision:
    """Decide whether a call may run. Pure: same inputs, same decision.

    Precedence, first match wins (fail closed):

    1. Deny: a deny rule, a hook's deny, the tool's deny, or PLAN with a call
       that is not read-only.
    2. An ask rule asks. Nothing overrides it: not a hook's allow, not BYPASS.
    3. BYPASS allows.
    4. A hook's ask asks.
    5. The tool's own ask asks, unless approved in advance by a hook's allow,
       an allow rule, or ACCEPT_EDITS for an EDIT call.
    6. Otherwise allow (a hook's allow, the tool's allow, an allow rule, or
       nobody objected).
    """
    denied = _deny(rule, hook, check, mode, kind)
    if denied is not None:
        return denied
    if rule is not None and rule.behavior == "ask":
        return PermissionDecision("ask", "rule", f"rule {rule.rule} requires approval")
    if mode is PermissionMode.BYPASS:
        return PermissionDecision("allow", "mode", "bypass mode")
    if hook is not None and hook.behavior == "ask":
        return PermissionDecision(
            "ask", "hook", hook.reason or "a hook asks for approval"
        )
    approval = _approval(hook, rule)
    if check.behavior == "ask":
        if approval is not None:
            return approval
        if mode is PermissionMode.ACCEPT_EDITS and kind is CallKind.EDIT:
            return PermissionDecision("allow", "mode", "accept-edits mode")
        reason = check.message or "the tool asks for approval"
        return PermissionDecision("ask", "tool", reason)
    if check.behavior == "allow" and (approval is None or approval.source == "rule"):
        return PermissionDecision("allow", "tool", check.message)
    return approval or PermissionDecision("allow", "default", "")
