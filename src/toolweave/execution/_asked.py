"""What an ask is, and the answers a call that asks can get without running.

`Asked` is one ask decision with what is needed to resolve it; the rest are
the texts: why an unattended ask was denied (naming the setting that would
allow it), what a suspended call waits with, and "not run".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePath
from typing import TypeAlias

from ..events import PendingApproval
from ..messages import ToolCall
from ..tools import PermissionCheck
from ..tools.builtin import ShellCommand
from ._decision import CallKind, PermissionDecision
from ._signals import CallFailed

__all__ = [
    "ALWAYS_KEY",
    "Asked",
    "not_asked",
    "pending_approval",
    "suspended_answer",
    "unattended_denial",
]

ALWAYS_KEY: TypeAlias = tuple[str, str | None]
"""What an "always" answer approves: ``(tool, subject)``, or ``("", the tool's rules)``."""


@dataclass(frozen=True, slots=True)
class Asked:
    """An ask decision and what is needed to resolve it or explain a denial."""

    decision: PermissionDecision
    check: PermissionCheck
    kind: CallKind
    tool: str
    subject: str | PurePath | None
    edit_without_workspace: bool = False
    """ACCEPT_EDITS would have approved it, but no workspace is set to judge edits by."""

    def key(self) -> ALWAYS_KEY:
        """What an "always" answer approves: the tool's rules, else tool + subject."""
        if self.decision.source == "tool" and self.check.rules:
            return ("", "\n".join(self.check.rules))
        return (self.tool, None if self.subject is None else str(self.subject))


def _suggested_rules(asked: Asked) -> tuple[str, ...]:
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


def unattended_denial(asked: Asked) -> str:
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


def pending_approval(call: ToolCall, asked: Asked) -> PendingApproval:
    """What a person is shown of a call that waits for them."""
    source = asked.decision.source
    return PendingApproval(
        call.ref,
        call.id,
        asked.tool,
        dict(call.input),
        asked.decision.reason,
        rules=_suggested_rules(asked) if source not in ("rule", "hook") else (),
        source=source,
    )


def suspended_answer(tool: str) -> CallFailed:
    """The placeholder answer of a pending call (no transcript receives it)."""
    return CallFailed(
        f"Not run yet: the call to {tool!r} waits for a person's approval; the run"
        " is suspended and runs it (or answers it denied) when resumed.",
        synthetic=True,
    )


def not_asked(tool: str) -> CallFailed:
    """The answer to a call whose wait for permission was cut: it never started."""
    return CallFailed(
        "Not run: the run was stopped while this call waited for permission."
        f" The tool {tool!r} was never started.",
        synthetic=True,
    )
