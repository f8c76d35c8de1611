"""The declaration audit in the CLI: violation lines, the run's summary, stored violations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..events import DeclarationViolation
from ..sessions import SessionStore

__all__ = [
    "MARKER",
    "StoredViolation",
    "audit_summary",
    "stored_violations",
    "violation_line",
    "violations_by_call",
]

MARKER = "⚠ undeclared"
"""What the live view and the timeline put on a call that broke its declaration."""


@dataclass(frozen=True, slots=True)
class StoredViolation:
    """A `DeclarationViolation` as the session store keeps it."""

    run: int
    call_id: str
    key: str
    tool: str
    operation: str
    target: str
    source: str
    reason: str
    blocked: bool


def violation_line(v: DeclarationViolation | StoredViolation) -> str:
    """``read_note: open /notes/.last-read (blocked) at notes.py:12 — reason``."""
    what = f"{v.tool}: {v.operation} {v.target}"
    if v.blocked:
        what += " (blocked)"
    if v.source:
        what += f" at {v.source}"
    return f"{what} — {v.reason}" if v.reason else what


def audit_summary(
    mode: str, violations: Sequence[DeclarationViolation | StoredViolation]
) -> str | None:
    """The run's one-line audit summary; None when the audit was off and saw nothing."""
    if not violations:
        return None if mode == "off" else f"declaration audit ({mode}): no violations"
    calls = len({v.call_id for v in violations})
    blocked = sum(v.blocked for v in violations)
    tools = sorted({v.tool for v in violations})
    noun = "violation" if len(violations) == 1 else "violations"
    line = (
        f"declaration audit ({mode}): {len(violations)} {noun} in {calls}"
        f" call{'s' if calls != 1 else ''} of {', '.join(tools)}"
    )
    return line + (f", {blocked} blocked" if blocked else "")


def _stored(run: int, data: Mapping[str, Any]) -> StoredViolation:
    return StoredViolation(
        run=run,
        call_id=str(data.get("call_id", "")),
        key=str(data.get("key", "")),
        tool=str(data.get("tool", "")),
        operation=str(data.get("operation", "")),
        target=str(data.get("target", "")),
        source=str(data.get("source", "")),
        reason=str(data.get("reason", "")),
        blocked=bool(data.get("blocked", False)),
    )


def stored_violations(store: SessionStore, session_id: str) -> list[StoredViolation]:
    """Every violation stored for the session, in the order they were reported."""
    return [
        _stored(e.run, e.data)
        for e in store.events(session_id)
        if e.kind == DeclarationViolation.__name__
    ]


def violations_by_call(
    violations: Sequence[StoredViolation],
) -> dict[tuple[int, str], list[StoredViolation]]:
    """Violations keyed by ``(run, call key)`` (the id when no key was set)."""
    out: dict[tuple[int, str], list[StoredViolation]] = {}
    for v in violations:
        out.setdefault((v.run, v.key or v.call_id), []).append(v)
    return out
