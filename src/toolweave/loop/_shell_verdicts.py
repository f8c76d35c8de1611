"""What a shell hook's run says: its exit status and JSON output, read as a decision.

The protocol (a subset of Claude Code's) is described in `_shell_hooks`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..execution import (
    PostToolUseDecision,
    PreToolUseDecision,
    RunStartDecision,
    StopDecision,
)

__all__ = [
    "HookRun",
    "post_decision",
    "pre_decision",
    "run_start_decision",
    "stop_decision",
]

_PERMISSIONS = {
    "allow": "allow",
    "deny": "deny",
    "ask": "ask",
    "approve": "allow",
    "block": "deny",
}


@dataclass(frozen=True, slots=True)
class HookRun:
    """What one hook command did."""

    code: int
    """Exit status."""
    stdout: str
    """Its standard output."""
    stderr: str
    """Its standard error."""

    def json(self) -> dict[str, Any]:
        """Stdout as a JSON object ({} when empty or not an object)."""
        text = self.stdout.strip()
        if not text.startswith("{"):
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}


def pre_decision(run: HookRun) -> PreToolUseDecision | None:
    if run.code == 2:
        return PreToolUseDecision(
            permission="deny", reason=run.stderr.strip() or "blocked by a hook"
        )
    data = run.json()
    if not data:
        return None
    specific = data.get("hookSpecificOutput") or {}
    raw = specific.get("permissionDecision") or data.get("decision")
    permission = _PERMISSIONS.get(str(raw)) if raw is not None else None
    updated = specific.get("updatedInput")
    return PreToolUseDecision(
        updated_input=updated if isinstance(updated, dict) else None,
        permission=permission,  # type: ignore[arg-type]
        reason=str(
            specific.get("permissionDecisionReason") or data.get("reason") or ""
        ),
        additional_context=specific.get("additionalContext"),
        prevent_continuation=data.get("continue") is False,
        stop_reason=str(data.get("stopReason") or ""),
    )


def post_decision(run: HookRun) -> PostToolUseDecision | None:
    if run.code == 2:
        return PostToolUseDecision(additional_context=run.stderr.strip() or None)
    data = run.json()
    if not data:
        return None
    specific = data.get("hookSpecificOutput") or {}
    context = specific.get("additionalContext")
    if data.get("decision") == "block":
        context = "\n".join(
            x for x in (str(data.get("reason") or ""), context or "") if x
        )
    return PostToolUseDecision(
        additional_context=context or None,
        replace_output=specific.get("updatedMCPToolOutput"),
        prevent_continuation=data.get("continue") is False,
        stop_reason=str(data.get("stopReason") or ""),
    )


def stop_decision(run: HookRun) -> StopDecision | None:
    if run.code == 2:
        return StopDecision(
            reason=run.stderr.strip() or "a stop hook asked to continue"
        )
    data = run.json()
    if data.get("decision") == "block":
        return StopDecision(
            reason=str(data.get("reason") or "a stop hook asked to continue")
        )
    return None


def run_start_decision(run: HookRun) -> RunStartDecision | None:
    if run.code != 0:
        return None
    data = run.json()
    if data:
        specific = data.get("hookSpecificOutput") or {}
        context = specific.get("additionalContext")
        return RunStartDecision(additional_context=str(context) if context else None)
    text = run.stdout.strip()
    return RunStartDecision(additional_context=text) if text else None
