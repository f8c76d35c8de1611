"""The process-wide audit hook (PEP 578) and the context variable that says which call runs.

A hook can never be removed, so it is installed lazily, the first time a call
runs with the audit on. With no call scope set in the current context (audit
off, or code outside any call) the hook returns after one context-variable
read. The scope is set in the task that runs the call, so it follows the call
into the tasks it starts and into `anyio.to_thread` workers (which copy the
context), and never into other calls. A raw `threading.Thread` starts with an
empty context: what it does is not seen.
"""

from __future__ import annotations

import contextvars
import errno
import sys
import threading
from dataclasses import dataclass, field
from types import FrameType

from ..tools import Access, Concurrency
from ._audit_ops import AUDITED_EVENTS, Operation, classify_event
from ._audit_rules import rule_broken

__all__ = ["AuditScope", "Breach", "current_scope", "ensure_installed"]


@dataclass(frozen=True, slots=True)
class Breach:
    """One operation outside the declaration, as the hook saw it."""

    op: Operation
    """What was done."""
    reason: str
    """Why it breaks the declaration."""
    source: str
    """``file:line`` of the tool's own code that did it ('' if not found)."""
    blocked: bool
    """True if it was stopped (enforce)."""

    def describe(self, tool: str) -> str:
        """One line for people and models."""
        where = f" at {self.source}" if self.source else ""
        return f"{tool}: {self.op.action} {self.op.target}{where} — {self.reason}"


@dataclass(slots=True, eq=False)
class AuditScope:
    """The audit state of one running call.

    `breaches` is appended from whichever thread the call's work runs on
    (list appends are atomic); read it once the call is over.
    """

    call_id: str
    tool: str
    concurrency: Concurrency
    access: Access
    enforce: bool
    code_files: frozenset[str]
    breaches: list[Breach] = field(default_factory=list)
    private: set[str] = field(default_factory=set)

    def observe(self, op: Operation, frame: FrameType | None) -> None:
        """Check `op`; record a breach, and raise PermissionError if enforcing."""
        if op.exclusive:  # a new file: nobody else saw it before
            self.private.add(op.target)
            return
        reason = rule_broken(op, self.concurrency, self.access, self.private)
        if reason is None:
            return
        breach = Breach(op, reason, self._source(frame), self.enforce)
        self.breaches.append(breach)
        if self.enforce:
            raise PermissionError(
                errno.EACCES, f"Declaration audit: {breach.describe(self.tool)}"
            )

    def _source(self, frame: FrameType | None) -> str:
        """The innermost frame in the tool's own code (else the innermost outside the stdlib)."""
        fallback = ""
        while frame is not None:
            code = frame.f_code
            name = code.co_filename
            if name in self.code_files:
                return f"{name}:{frame.f_lineno}"
            if not fallback and _is_user_file(name):
                fallback = f"{name}:{frame.f_lineno}"
            frame = frame.f_back
        return fallback


_STDLIB = tuple(
    p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p and p != "/"
)
_OWN = __file__.rsplit("/", 2)[0] + "/"  # toolweave's own package


def _is_user_file(name: str) -> bool:
    return not (
        name.startswith("<") or name.startswith(_STDLIB) or name.startswith(_OWN)
    )


_scope: contextvars.ContextVar[AuditScope | None] = contextvars.ContextVar(
    "toolweave_audit_scope", default=None
)
_get = _scope.get
_events = AUDITED_EVENTS


def _hook(event: str, args: tuple[object, ...]) -> None:
    scope = _get()
    if scope is None or event not in _events:
        return
    try:
        ops = classify_event(event, args)
    except Exception:  # never break the operation for the audit's own fault
        return
    frame = sys._getframe(1)
    for op in ops:
        scope.observe(op, frame)


# PEP 578: hooks are not traced unless they ask; let debuggers and coverage in.
_hook.__cantrace__ = True  # type: ignore[attr-defined]

_install_lock = threading.Lock()
_installed = False


def ensure_installed() -> None:
    """Install the hook once per process (it can never be removed)."""
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


def current_scope() -> contextvars.ContextVar[AuditScope | None]:
    """The context variable holding the running call's scope (None outside calls)."""
    return _scope
