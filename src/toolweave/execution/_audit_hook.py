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

import errno
import os
import sys
import threading
import weakref
from dataclasses import dataclass
from types import FrameType

from .._native.threads import AbandonRecord, abandons_here, current_zone
from ..tools import Tool, silenced_declaration_errors
from ._audit_ops import AUDITED_EVENTS, Operation, classify_event
from ._audit_rules import (
    effective_access,
    exclusive_is_private,
    in_temp_dir,
    rule_broken,
    temp_dir,
)

__all__ = ["AuditScope", "Breach", "code_files", "current_scope", "ensure_installed"]


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


class _Findings:
    """What one call's audit learned; made at its first checked operation."""

    __slots__ = ("access", "breaches", "concurrency", "files", "private")

    def __init__(self, tool: Tool, args: dict[str, object]) -> None:
        with silenced_declaration_errors():  # the scheduler reported them already
            self.concurrency = tool.concurrency_for(args)
            declared = tool.access_for(args)
        self.access = effective_access(self.concurrency, declared)
        self.breaches: list[Breach] = []  # appended from any thread (atomic)
        self.private: set[str] = set()
        self.files: frozenset[str] | None = None


_findings_lock = threading.Lock()


class AuditScope(AbandonRecord):
    """The audit state of one running call.

    Cheap to create, since every audited call pays it: what the call declared
    is worked out at its first checked operation, from whichever thread that
    runs on. Read `breaches` once the call is over.

    It is the call's thread zone too (`AbandonRecord`): the context variable
    that carries the zone into the call's tasks and threads carries the audit,
    so an audited call sets one variable, not two. It abandons cancelled
    threads as the zone it was made in did, unless `abandons` says otherwise.
    """

    __slots__ = ("_findings", "args", "call_id", "ended", "enforce", "tool")

    def __init__(
        self,
        call_id: str,
        tool: Tool,
        args: dict[str, object],
        enforce: bool,
        abandons: bool | None = None,
    ) -> None:
        # The record's fields set here, not by its __init__: every audited call
        # pays for this constructor.
        self.abandons = abandons_here() if abandons is None else abandons
        self.count = 0
        self.call_id = call_id
        self.tool = tool
        self.args = args
        self.enforce = enforce
        self.ended = False
        """Set when the call is over; work it left behind still carries the scope."""
        self._findings: _Findings | None = None

    def end(self) -> bool:
        """Mark the call over; True if any of its operations was checked (then see `breaches`)."""
        self.ended = True  # what it left running is stopped from now on
        findings = self._findings
        if findings is None:
            return False
        self._check_leftovers(findings)
        return True

    @property
    def breaches(self) -> list[Breach]:
        """The operations outside the declaration, in the order they were seen."""
        findings = self._findings
        return [] if findings is None else findings.breaches

    def _learn(self) -> _Findings:
        findings = self._findings
        if findings is None:
            with _findings_lock:  # two threads of one call may both get here first
                findings = self._findings = self._findings or _Findings(
                    self.tool, self.args
                )
        return findings

    def observe(self, op: Operation, frame: FrameType | None) -> None:
        """Check `op`; record a breach, and raise PermissionError if enforcing."""
        findings = self._learn()
        if op.exclusive and exclusive_is_private(op.target, findings.access):
            findings.private.add(op.target)  # a new scratch file: nobody saw it before
            return
        reason = rule_broken(
            op, findings.concurrency, findings.access, findings.private
        )
        if reason is None or _in_finalizer(frame):
            return
        # Once the call is over (a timed-out worker thread left running), its
        # result is out and its slot is free: nobody can be warned in time and a
        # conflicting call may be running, so it is stopped in every mode.
        stop = self.enforce or self.ended
        breach = Breach(op, reason, self._source(findings, frame), stop)
        findings.breaches.append(breach)
        if stop:
            raise PermissionError(
                errno.EACCES, f"Declaration audit: {breach.describe(self.tool.name)}"
            )

    def _check_leftovers(self, findings: _Findings) -> None:
        """Once the call is over: a scratch file it left beside its declared writes is a breach.

        Such a file was let through as the temp file of an atomic write; still
        there, it is a new file other calls can see. It can only be reported
        (it exists already); in enforce mode the call still fails.
        """
        for path in sorted(findings.private):
            op = Operation("write", "open", path)
            if in_temp_dir(path) or not os.path.lexists(path):
                continue
            if rule_broken(op, findings.concurrency, findings.access, set()) is None:
                continue  # a declared file, created with O_EXCL: it may stay
            reason = (
                "the call left behind a file it created exclusively outside its"
                f" declared writes {list(findings.access.writes)}"
            )
            findings.breaches.append(Breach(op, reason, "", False))

    def _source(self, findings: _Findings, frame: FrameType | None) -> str:
        """The innermost frame in the tool's own code (else the innermost outside the stdlib)."""
        if findings.files is None:
            findings.files = code_files(self.tool)
        fallback = ""
        while frame is not None:
            name = frame.f_code.co_filename
            if name in findings.files:
                return f"{name}:{frame.f_lineno}"
            if not fallback and _is_user_file(name):
                fallback = f"{name}:{frame.f_lineno}"
            frame = frame.f_back
        return fallback


def _function_file(fn: object) -> str | None:
    fn = getattr(fn, "func", fn)  # functools.partial
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    return getattr(code, "co_filename", None)


def code_files(tool: Tool) -> frozenset[str]:
    """The files holding the tool's own code (where its source line is looked for)."""
    files: set[str | None] = set()
    subject: object = tool
    while subject is not None:
        fn = getattr(subject, "fn", None) or getattr(type(subject), "call", None)
        files.add(_function_file(fn))
        subject = getattr(subject, "inner", None)  # a WrappedTool's tool
    return frozenset(f for f in files if f is not None)


_WEAKREF_CALLBACK = weakref.finalize.__call__.__code__


def _in_finalizer(frame: FrameType | None) -> bool:
    """True inside ``__del__`` or a weakref.finalize callback.

    The garbage collector runs them at any allocation, in whatever context is
    current: their operations belong to whoever dropped the object, not to
    the call that happened to be running.
    """
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code is _WEAKREF_CALLBACK:
            return True
        frame = frame.f_back
    return False


_STDLIB = tuple(
    p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p and p != "/"
)
_OWN = __file__.rsplit("/", 2)[0] + "/"  # toolweave's own package


def _is_user_file(name: str) -> bool:
    return not (
        name.startswith("<") or name.startswith(_STDLIB) or name.startswith(_OWN)
    )


_zone = current_zone()
_get = _zone.get
_events = AUDITED_EVENTS


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event not in _events:
        return
    scope = _get()
    if not isinstance(scope, AuditScope):
        return
    frame = sys._getframe().f_back  # None when the event comes from C alone
    try:
        for op in classify_event(event, args):
            scope.observe(op, frame)
    except PermissionError:  # enforce: stop the operation
        raise
    except Exception:  # never break the operation for the audit's own fault
        return


# PEP 578: hooks are not traced unless they ask; let debuggers and coverage in.
_hook.__cantrace__ = True  # type: ignore[attr-defined]

_install_lock = threading.Lock()
_installed = False


def ensure_installed() -> None:
    """Install the hook once per process (it can never be removed)."""
    global _installed
    with _install_lock:
        if not _installed:
            temp_dir()  # taken now: the hook must not probe for it, nor a tool move it
            sys.addaudithook(_hook)
            _installed = True


def current_scope() -> AuditScope | None:
    """The audit scope of the call this code runs in (None outside audited calls)."""
    scope = _get()
    return scope if isinstance(scope, AuditScope) else None
