"""ToolRunner: one call's whole lifecycle, from the model's ToolCall to its ToolResult.

The runner is the dispatcher: it finds the tool, picks the call's path from
the tool's cached plan (`_plan`), runs it (`_plain` or `_staged`) and words
what a stage refused (`_answers`). What the paths share is in `_lifecycle`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Unpack, final

import anyio

from ..messages import ToolCall, ToolResult
from ..tools import SessionState, Tool, ToolRegistry
from ._answers import Answered, finished, internal_error, refused, unknown_tool
from ._audit import AuditMode
from ._budget import enforce_batch_budget
from ._decision import PermissionMode
from ._lifecycle import Lifecycle
from ._plain import run_plain
from ._plan import PlanCache
from ._runner_options import RunnerKeywords, RunnerOptions, StartBarrier
from ._signals import BatchSignals, CallFailed
from ._staged import run_staged
from ._suspend import SuspendPoint

__all__ = ["RunnerStatistics", "StartBarrier", "ToolRunner"]

_DEFAULT_OPTIONS = RunnerOptions()


@final
@dataclass(frozen=True, slots=True)
class RunnerStatistics:
    """Counters of a `ToolRunner` since it was created."""

    calls: int
    """Calls run (every call gets exactly one result)."""
    errors: int
    """Calls whose result is an error."""
    timeouts: int
    """Calls that ran past their timeout."""
    threads_left: int
    """Worker threads left running after a timeout (they cannot be stopped)."""
    persisted: int
    """Results replaced by a preview (per-tool threshold or batch budget)."""


@final
class ToolRunner:
    """Runs one tool call through its lifecycle; the `runner` a Dispatcher is given.

    Stages, in order (as in Claude Code): lookup (aliases; an unknown name is told
    the closest known tools) → schema validation → the tool's `validate_input`
    → PreToolUse hooks (a rewrite is validated again) → permission decision
    (`decide_permission`; ask → the ask handler, none = deny) → the call under
    its timeout → output mapping (empty → placeholder) → large-result
    persistence → PostToolUse / PostToolUseFailure hooks. Any stage may end
    the call with an error result; `__call__` never raises except cancellation,
    which propagates (the Dispatcher writes the synthetic result).

    `before_start` is awaited once the call may start (after the permission
    decision), right before `ToolRunning` and the tool's own code; if it
    returns a reason the call does not start and is answered "Not run: <reason>"
    (synthetic). Cut by an interrupt while it waits, the call is answered as
    never started, as in the PreToolUse hooks.

    `audit` switches the declaration audit on for the calls it runs
    (``"warn"`` reports `DeclarationViolation` events, ``"enforce"`` also
    stops the operation and fails the call; see `toolweave.execution`'s
    audit notes); ``"off"`` (the default) installs nothing.

    `deadline` bounds every call (the agent loop passes its wall-clock
    budget): a call not started by then is answered "not run", a tool still
    running then is cut as at its timeout, BLOCK or not (see `RunDeadline`).

    `interrupt` is the run's halt (the token its Dispatcher is given): once it
    is set, a call waiting for the ask handler (or for its turn to ask) is
    answered "not run" at once and no new question is asked, whatever the
    tool's Interrupt behaviour: the tool never started. Without it, only a
    cancelled call stops waiting (answered the same way).

    The options come as one `RunnerOptions` record (`options=`) or as its
    fields' keywords (`RunnerKeywords`; both: the keywords win). Each call
    takes one of two paths, chosen once per tool and cached (`ToolPlan`): the
    plain path when no stage can act on it (no timeout, deadline, audit,
    matching hook, `validate_input` or permission opinion), else the staged
    chain, entering only the stages that can act. Both word every answer
    alike (`_answers`, `_after.settle`); a hook added later or a new `mode`
    makes the runner plan again.

    Concurrency: calls of a batch may be awaited concurrently on one event loop;
    their hooks then run concurrently too. The runner is bound to the event loop
    it is used on and is not thread-safe.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        state: SessionState,
        options: RunnerOptions = _DEFAULT_OPTIONS,
        **keywords: Unpack[RunnerKeywords],
    ) -> None:
        if keywords:
            options = replace(options, **keywords)
        self._options = options
        self._lifecycle = lc = Lifecycle(registry, state, options)
        self._plans = PlanCache(
            options.config,
            options.hooks,
            lc.gate,
            audited=options.audit != "off",
            deadline=options.deadline,
        )

    @property
    def options(self) -> RunnerOptions:
        """The options the runner was made with (`mode` may have moved on since)."""
        return self._options

    @property
    def audit(self) -> AuditMode:
        """The declaration audit's mode for the calls this runner runs."""
        return self._lifecycle.auditor.mode

    @property
    def suspend_point(self) -> SuspendPoint | None:
        """The run's suspension state, if it has one."""
        return self._lifecycle.suspend

    @property
    def always(self) -> tuple[tuple[str, str | None], ...]:
        """The "always" approvals given so far (a suspension carries them on)."""
        return self._lifecycle.gate.always

    @property
    def mode(self) -> PermissionMode:
        """The permission mode; may be changed between batches."""
        return self._lifecycle.gate.mode

    @mode.setter
    def mode(self, mode: PermissionMode) -> None:
        self._lifecycle.gate.mode = mode
        self._plans.clear()  # the permission stage's opinion may have changed

    @property
    def replacements(self) -> Mapping[str, str]:
        """Call key (`ToolCall.ref`) → replacement text of every persisted result."""
        return self._lifecycle.ledger.view()

    def replacement_for(self, ref: str) -> str | None:
        """The sticky replacement of the call `ref`'s result, or None if never replaced.

        `ref` is the call's `ToolCall.ref`: its key when the loop set one, else its
        id. Re-render history with it: once replaced, a result must look the same
        in every later request (prompt-cache stability).
        """
        return self._lifecycle.ledger.get(ref)

    def statistics(self) -> RunnerStatistics:
        """Counters since creation."""
        lc = self._lifecycle
        return RunnerStatistics(
            calls=lc.calls,
            errors=lc.errors,
            timeouts=lc.timeouts,
            threads_left=lc.threads_left,
            persisted=len(lc.ledger),
        )

    def take_signals(self) -> BatchSignals:
        """What hooks and tools asked for since the last call, in call order; then reset.

        Call order is the order of the last `finish_batch`; entries of calls not
        in it come last.
        """
        return self._lifecycle.signals.take()

    def keep_signals(self) -> tuple[tuple[str, str, str], ...]:
        """What hooks and tools asked for in a batch that suspended; then reset.

        ``(kind, call key, text)`` entries, kind ``"context"`` or ``"stop"``:
        a `Suspension` carries them and the resume hands them to
        `restore_signals`, so nothing said before the suspension is lost.
        """
        return self._lifecycle.signals.keep()

    def restore_signals(self, kept: Sequence[tuple[str, str, str]]) -> None:
        """Give a resumed batch back what `keep_signals` kept (before it runs)."""
        self._lifecycle.signals.restore(kept)

    def finish_batch(
        self,
        results: Sequence[ToolResult],
        calls: Sequence[ToolCall] | None = None,
    ) -> list[ToolResult]:
        """Enforce the batch's aggregate budget; returns the results to record.

        Pass the batch's results in call order, and its `calls` (same order)
        whenever ids may repeat: results are then known by each call's `ref`,
        not by `call_id`. Results replaced before keep their replacement
        (sticky); then the largest are persisted until the batch fits
        `batch_result_chars`, except those of tools exempt from persistence
        (``max_result_chars=None``; known only when `calls` is given). Writes
        files synchronously, and only when over budget. Never raises.
        """
        lc = self._lifecycle
        keys = [r.call_id for r in results] if calls is None else [c.ref for c in calls]
        lc.signals.set_order(keys)
        return enforce_batch_budget(
            results,
            lc.config.batch_result_chars,
            ledger=lc.ledger,
            results_dir=lc.state.results_dir,
            preview_chars=lc.config.preview_chars,
            keys=keys,
            exempt=self._exempt(calls or ()),
        )

    def _exempt(self, calls: Sequence[ToolCall]) -> set[int]:
        """Positions of calls whose tool is never persisted (it pages, like `read`)."""
        exempt: set[int] = set()
        for index, call in enumerate(calls):
            tool = self._lifecycle.registry.get(call.name)
            if tool is not None and tool.max_result_chars is None:
                exempt.add(index)
        return exempt

    async def __call__(self, call: ToolCall) -> ToolResult:
        """Run `call` and return its result. Never raises, except cancellation.

        The tool is the one `call.name` resolves to now.
        """
        return await self.run_resolved(call, self._lifecycle.registry.get(call.name))

    async def run_resolved(self, call: ToolCall, tool: Tool | None) -> ToolResult:
        """Run `call` as `tool`, the tool the scheduler classified it by (None: unknown).

        The Dispatcher calls this, not `__call__`, for a call it classified: a
        context modifier may have re-registered the name since, and the call
        must run as what its overlap was decided for (issue 29, item 4). A
        stage that refuses the call raises its answer (`CallFailed`,
        `Answered`); it is worded here, once for both paths.
        """
        lc = self._lifecycle
        suspend = lc.suspend
        if suspend is not None and suspend.tripped:
            return suspend.hold(call)  # nothing starts once a call waits for a person
        lc.calls += 1
        try:
            deadline = lc.deadline
            if deadline is not None and deadline.remaining(anyio.current_time()) <= 0:
                raise Answered(deadline.not_run(call))
            if tool is None:
                raise unknown_tool(lc.registry, call)
            plan = self._plans.of(tool)
            if plan.plain:
                result = await run_plain(lc, plan, call)
            else:
                result = await run_staged(lc, plan, call)
        except Answered as answered:
            result = answered.result
        except CallFailed as failed:
            if failed.warning is not None:
                lc.warn(failed.warning)
            result = refused(call, failed)
        except Exception as exc:  # a bug in toolweave must not break the batch
            result = internal_error(call, exc)
        if result.is_error:
            lc.errors += 1
        return finished(result)
