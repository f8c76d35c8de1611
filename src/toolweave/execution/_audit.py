"""The declaration audit around one call: scope it, report what broke the declaration.

`Auditor.run` is the runner's one seam: it sets the call's `AuditScope` for
the time the tool itself runs (not the lifecycle's own work before or after:
hooks, result persistence and the session store are the runtime's, not the
tool's), then reports each breach as a `DeclarationViolation` event and, in
enforce mode, turns the call into an error result that names the breach.
See `_audit_rules` for what counts as a breach and `_audit_hook` for how
operations are seen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Literal, TypeAlias, get_args

from .._exceptions import ConfigError
from .._native.threads import AbandonRecord, abandoning_threads, abandons_here
from ..events import DeclarationViolation, Event
from ..messages import ToolCall
from ..tools import Tool
from ._audit_hook import AuditScope, current_scope, ensure_installed
from ._execute import Executed, emit_safely

__all__ = [
    "AuditMode",
    "Auditor",
    "audit_mode_here",
    "check_audit_mode",
    "outside_audit",
    "unaudited",
]

AuditMode: TypeAlias = Literal["off", "warn", "enforce"]
"""off: no hook at all; warn: report and let it happen; enforce: stop it."""

_MODES: tuple[str, ...] = get_args(AuditMode)
_MAX_SHOWN = 3
EventSink = Callable[[Event], None]


def check_audit_mode(mode: object) -> AuditMode:
    """`mode` as an AuditMode.

    Raises:
        ConfigError: if it is not ``"off"``, ``"warn"`` or ``"enforce"``.
    """
    if mode == "off":
        return "off"
    if mode == "warn":
        return "warn"
    if mode == "enforce":
        return "enforce"
    raise ConfigError(f"audit must be one of {', '.join(_MODES)}; got {mode!r}")


def audit_mode_here() -> AuditMode:
    """The mode of the audited call this code runs in; ``"off"`` outside any."""
    scope = current_scope()
    if scope is None:
        return "off"
    return "enforce" if scope.enforce else "warn"


@contextmanager
def outside_audit() -> Iterator[None]:
    """Within the block, nothing is attributed to the running call.

    For runtime work a tool hosts (a sub-agent's model calls and bookkeeping):
    it is not the tool's own doing. The tasks started in the block inherit it.
    Cancelled worker threads are abandoned, or not, as around the block; one
    abandoned inside it is not counted in the call's own record.
    """
    if current_scope() is None:
        yield
        return
    with abandoning_threads(AbandonRecord(abandons_here())):
        yield


def unaudited(sink: EventSink) -> EventSink:
    """`sink`, run outside any call's audit scope (a listener's I/O is not the tool's)."""

    def call(event: Event) -> None:
        with outside_audit():
            sink(event)

    return call


class Auditor:
    """Runs calls under the declaration audit in one mode; the runner holds one.

    Thread affinity: `run` is awaited on the event loop; the scope it sets is
    seen from every thread and task the call's work runs on.
    """

    __slots__ = ("enforce", "mode")

    def __init__(self, mode: AuditMode) -> None:
        self.mode = check_audit_mode(mode)
        """The audit mode."""
        self.enforce = self.mode == "enforce"
        """True in enforce mode (what each call's `AuditScope` is made with)."""
        if self.mode != "off":
            ensure_installed()  # lazily: never while every runner has the audit off

    async def run(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        work: Awaitable[Executed],
        on_event: EventSink | None,
    ) -> Executed:
        """Await `work` (the tool's execution) under the call's audit scope.

        A checkpoint (it awaits `work`). Breaches are reported as events once
        `work` is over, also when it is cancelled. A breach by work the call
        leaves running after that (a timed-out worker thread) is stopped in
        every mode and not reported: the call's result is already out. In enforce mode a call with
        a breach ends with an error naming it, even if the tool caught the
        PermissionError and went on.

        A runner that awaits the work in its own frame does the same inline
        (`ToolRunner` does: a wrapper coroutine per call is a measurable share
        of a trivial call): ``scope = AuditScope(call.id, tool, args,
        auditor.enforce)``, run the work in
        ``abandoning_threads(scope)`` (`execute` takes it as its zone), then in
        a ``finally`` ``breached = scope.end() and auditor.report(...)``, and
        if `breached`, `settle`.
        """
        if self.mode == "off":
            return await work
        scope = AuditScope(call.id, tool, args, self.enforce)
        try:
            with abandoning_threads(scope):
                executed = await work
        finally:
            breached = scope.end() and self.report(scope, call, on_event)
        return self.settle(scope, executed) if breached else executed

    @staticmethod
    def report(scope: AuditScope, call: ToolCall, on_event: EventSink | None) -> bool:
        """Report the breaches of a scope that `end()` said saw something; True if any.

        Call it in a ``finally`` (after ``scope.end()``): a cancelled call's
        breaches are reported too.
        """
        if not scope.breaches:
            return False
        if on_event is not None:
            _report(scope, call, on_event)
        return True

    @staticmethod
    def settle(scope: AuditScope, executed: Executed) -> Executed:
        """In enforce mode, the call fails with an error naming its breaches."""
        return _settle(scope, executed)


def _report(scope: AuditScope, call: ToolCall, on_event: EventSink) -> None:
    for breach in scope.breaches:
        event = DeclarationViolation(
            scope.call_id,
            scope.tool.name,
            breach.op.action,
            breach.op.target,
            breach.source,
            key=call.key,
            reason=breach.reason,
            blocked=breach.blocked,
        )
        emit_safely(on_event, event)


def _settle(scope: AuditScope, executed: Executed) -> Executed:
    """In enforce mode, a call with a breach fails with an error naming it."""
    if not scope.enforce:
        return executed
    shown = "; ".join(b.describe(scope.tool.name) for b in scope.breaches[:_MAX_SHOWN])
    more = len(scope.breaches) - _MAX_SHOWN
    if more > 0:
        shown += f" (and {more} more)"
    message = (
        f"Blocked by the declaration audit: {shown}. The tool's declared concurrency"
        " and access do not allow this; declare it (see toolweave.Access) or do not"
        " do it."
    )
    if executed.error is not None and "Declaration audit" not in executed.error:
        message += f" The tool then failed with: {executed.error}"
    return Executed(
        error=message, timed_out=executed.timed_out, thread_left=executed.thread_left
    )
