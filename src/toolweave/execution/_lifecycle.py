"""Lifecycle: what every stage of one runner's calls shares, and the steps both paths take.

A `ToolRunner` holds one. The plain path (`_plain`) and the staged chain
(`_staged`) run a call over it; the steps they both take (the call's context,
the start barrier, `ToolRunning`, the output as a result, a large result
persisted) are its methods, so each is written once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal, final

import anyio

from ..events import ToolRunning
from ..events import Warning as WarningEvent
from ..messages import ToolCall, ToolResult
from ..tools import Interrupt, SessionState, Tool, ToolContext, ToolRegistry
from ._answers import BARRIER_CUT, Answered, cut_before_start, mapped
from ._audit import Auditor, unaudited
from ._authorize import PermissionGate
from ._budget import persist_if_large
from ._execute import ProgressReporter, emit_safely
from ._output import utf8_safe
from ._persist import ReplacementLedger
from ._runner_options import RunnerOptions
from ._signals import SignalCollector

__all__ = ["Lifecycle"]

logger = logging.getLogger("toolweave.execution")


@final
class Lifecycle:
    """One runner's shared parts: its options made live, its ledger, signals and counters.

    Loop affinity: the runner's event loop; not thread-safe (nor is the runner).
    """

    __slots__ = (
        "auditor",
        "before_start",
        "calls",
        "config",
        "deadline",
        "errors",
        "gate",
        "ledger",
        "on_event",
        "progress_sink",
        "registry",
        "signals",
        "state",
        "suspend",
        "threads_left",
        "timeouts",
    )

    def __init__(
        self, registry: ToolRegistry, state: SessionState, options: RunnerOptions
    ) -> None:
        on_event = options.on_event
        self.registry = registry
        self.state = state
        self.config = options.config
        self.deadline = options.deadline
        self.before_start = options.before_start
        self.suspend = options.suspend
        self.on_event = on_event
        self.gate = PermissionGate(
            options.permissions,
            options.mode,
            options.ask,
            state,
            on_event=on_event,
            halt=options.interrupt,
            suspend=options.suspend,
        )
        self.auditor = Auditor(options.audit)
        # a listener's own I/O is not the audited tool's
        self.progress_sink = (
            on_event
            if on_event is None or options.audit == "off"
            else unaudited(on_event)
        )
        self.ledger = ReplacementLedger()
        self.signals = SignalCollector()
        # RunnerStatistics' counters (plain attributes: the cheapest to bump)
        self.calls = self.errors = self.timeouts = self.threads_left = 0

    def context(self, call: ToolCall) -> tuple[ToolContext, ProgressReporter | None]:
        """The call's `ToolContext`, and its progress reporter (to close) if anyone listens."""
        if self.progress_sink is None:
            return ToolContext(call, self.state), None
        reporter = ProgressReporter(call.id, self.progress_sink, key=call.key)
        return ToolContext(call, self.state, progress=reporter), reporter

    def running(self, call: ToolCall, tool: Tool) -> None:
        """Tell listeners the call's tool starts now, and what an interrupt would do to it."""
        if self.on_event is not None:
            interrupt: Literal["block", "cancel"] = (
                "block" if tool.interrupt is Interrupt.BLOCK else "cancel"
            )
            emit_safely(
                self.on_event,
                ToolRunning(call.id, key=call.key, interrupt=interrupt),
            )

    def warn(self, message: str) -> None:
        """Give listeners a `Warning`."""
        if self.on_event is not None:
            emit_safely(self.on_event, WarningEvent(message))

    async def pass_barrier(self, tool: Tool, call: ToolCall) -> None:
        """Await the start barrier; raise the call's answer if it must not start."""
        barrier = self.before_start
        assert barrier is not None
        try:
            refusal = await barrier(call)
        except anyio.get_cancelled_exc_class():
            # Level-triggered: an outer cancel fires again at the next checkpoint.
            raise cut_before_start(BARRIER_CUT, tool, call) from None
        except Exception as exc:
            logger.exception("the start barrier of call %s failed", call.id)
            refusal = f"its start could not be recorded ({exc!r}), so it never started"
        if refusal is not None:
            raise Answered(
                ToolResult(
                    call.id, f"Not run: {refusal}.", is_error=True, synthetic=True
                )
            )

    async def to_result(
        self,
        tool: Tool,
        call: ToolCall,
        output: object,
        modifier: Callable[[], object] | None,
    ) -> ToolResult:
        """The output as the call's result: mapped, padded, persisted if large."""
        result = mapped(tool, call, output, modifier)
        limit = tool.max_result_chars
        if limit is None:
            return result  # never persisted (it pages, like `read`)
        result = utf8_safe(result)  # before the ledger records a preview of it
        threshold = min(limit, self.config.max_result_chars)
        return await persist_if_large(
            result,
            threshold,
            ledger=self.ledger,
            results_dir=self.state.results_dir,
            # a preview never exceeds the threshold it stands in for
            preview_chars=max(1, int(min(self.config.preview_chars, threshold))),
            key=call.ref,
        )
