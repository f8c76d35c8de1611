"""audited(runner, registry): the declaration audit around a runner of your own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..events import Event
from ..messages import ToolCall, ToolResult
from ..tools import ToolRegistry
from ._audit import AuditMode, Auditor
from ._execute import Executed

__all__ = ["audited"]

Runner = Callable[[ToolCall], Awaitable[ToolResult]]


def audited(
    runner: Runner,
    registry: ToolRegistry,
    *,
    audit: AuditMode,
    on_event: Callable[[Event], None] | None = None,
) -> Runner:
    """`runner` with each call it runs under the declaration audit.

    For users of the scheduler alone whose runner is not `ToolRunner` (which
    takes ``audit=`` itself): hand the result to `Dispatcher.dispatch`. The
    whole `runner(call)` is attributed to the call, so keep your own
    bookkeeping (logging to files, stores) out of it or after it. A call whose
    tool is unknown or whose input does not parse is run unaudited (it runs no
    tool code). `on_event` gets each `DeclarationViolation`; in ``"enforce"``
    mode a call with a violation gets an error result naming it instead of
    what `runner` returned. ``"off"`` returns `runner` itself.

    Raises:
        ConfigError: if `audit` is not off, warn or enforce.
    """
    auditor = Auditor(audit)
    if auditor.mode == "off":
        return runner

    async def run(call: ToolCall) -> ToolResult:
        tool = registry.get(call.name)
        if tool is None:
            return await runner(call)
        try:
            args = tool.parse(call.input)
        except Exception:
            return await runner(call)
        outcome: list[ToolResult | Exception] = []

        async def work() -> Executed:
            try:
                outcome.append(await runner(call))
            except Exception as exc:  # the refusal itself, most likely
                outcome.append(exc)
            return Executed()

        executed = await auditor.run(tool, call, args, work(), on_event)
        if executed.error is not None:  # enforce: the audit's error names the breach
            return ToolResult(call.id, executed.error, is_error=True)
        if isinstance(outcome[0], Exception):
            raise outcome[0]  # the Dispatcher makes it the call's error result
        return outcome[0]

    return run
