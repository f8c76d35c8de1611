"""ToolRunner: one call's whole lifecycle, from the model's ToolCall to its ToolResult."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NoReturn, final

import anyio

from .._exceptions import ToolInputError
from ..events import Event, ToolRunning
from ..events import Warning as WarningEvent
from ..messages import ToolCall, ToolResult
from ..scheduling import InterruptToken
from ..tools import Interrupt, SessionState, Tool, ToolContext, ToolRegistry
from ._audit import AuditMode, Auditor, unaudited
from ._audit_hook import AuditScope
from ._authorize import AskHandler, PermissionGate
from ._budget import enforce_batch_budget, persist_if_large
from ._config import ExecutionConfig
from ._decision import HookVerdict, PermissionMode
from ._execute import (
    Executed,
    ProgressReporter,
    emit_safely,
    execute,
    failure_of,
    returned,
)
from ._hook_stage import run_failure_hooks, run_post_hooks, run_pre_hooks
from ._hooks import (
    Hooks,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreToolUseHook,
)
from ._output import (
    Content,
    empty_placeholder,
    is_empty,
    to_content,
    utf8_safe,
)
from ._persist import ReplacementLedger
from ._rules import PermissionRules
from ._run_deadline import RunDeadline
from ._scope import rewrite_scope_error
from ._signals import BatchSignals, CallFailed, SignalCollector
from ._suspend import SuspendPoint

__all__ = ["RunnerStatistics", "StartBarrier", "ToolRunner"]

StartBarrier = Callable[[ToolCall], Awaitable[str | None]]
"""Awaited right before a call's tool starts: None to start it, or why it must not.

The seam a session recorder uses to make a call's start durable before its code
runs (write-ahead), so "not started" in the record is true by construction.
"""

logger = logging.getLogger("toolweave.execution")

_PRE_HOOKS_CUT = (
    "Stopped while its PreToolUse hooks ran: the tool {tool!r} never started,"
    " so it had no effect."
)
_BARRIER_CUT = (
    "Not run: interrupted while its start was being recorded; the tool {tool!r}"
    " never started, so it had no effect."
)
_POST_HOOKS_CUT = (
    "Interrupted after the tool {tool!r} finished, while its PostToolUse hooks ran:"
    " its effects happened, but its output is withheld because the hooks that"
    " check it did not finish."
)

_MAX_LISTED_TOOLS = 20
_DEFAULT_CONFIG = ExecutionConfig()


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


def _not_json(tool: Tool, raw_arguments: str) -> CallFailed:
    """The answer to a call whose arguments were not valid JSON."""
    shown = raw_arguments[:200]
    return CallFailed(
        f"The arguments for tool {tool.name!r} are not valid JSON: {shown!r}."
        " Send a JSON object that matches the tool's input schema."
    )


def _invalid_input(tool: Tool, exc: Exception) -> CallFailed:
    """The answer to a call whose input `tool.parse` refused (or raised on)."""
    if isinstance(exc, ToolInputError):
        return CallFailed(str(exc))
    return CallFailed(
        f"Invalid input for tool {tool.name!r}: {type(exc).__name__}: {exc}."
        " The input must be a JSON object that matches the tool's schema."
    )


class _Answered(Exception):
    """Internal: a stage answered the call with `result` (the rest is skipped)."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.text)
        self.result = result


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

    `suspend` (the run's `SuspendPoint`): once a call is pending for a
    person's decision, every call that reaches this runner after is held
    (answered a placeholder, never started); see `SuspendPoint`.

    Concurrency: calls of a batch may be awaited concurrently on one event loop;
    their hooks then run concurrently too. The runner is bound to the event loop
    it is used on and is not thread-safe.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        state: SessionState,
        config: ExecutionConfig = _DEFAULT_CONFIG,
        hooks: Hooks | None = None,
        permissions: PermissionRules | None = None,
        mode: PermissionMode = PermissionMode.DEFAULT,
        ask: AskHandler | None = None,
        on_event: Callable[[Event], None] | None = None,
        audit: AuditMode = "off",
        deadline: RunDeadline | None = None,
        before_start: StartBarrier | None = None,
        interrupt: InterruptToken | None = None,
        suspend: SuspendPoint | None = None,
    ) -> None:
        self._registry = registry
        self._suspend = suspend
        self._deadline = deadline
        self._state = state
        self._config = config
        self._hooks = hooks
        self._gate = PermissionGate(
            permissions,
            mode,
            ask,
            state,
            on_event=on_event,
            halt=interrupt,
            suspend=suspend,
        )
        self._on_event = on_event
        self._before_start = before_start
        self._auditor = Auditor(audit)
        self._progress_sink = (
            on_event if on_event is None or audit == "off" else unaudited(on_event)
        )
        self._ledger = ReplacementLedger()
        self._signals = SignalCollector()
        # RunnerStatistics' counters (plain attributes: the cheapest to bump)
        self._calls = self._errors = self._timeouts = self._threads_left = 0
        self._unaudited = audit == "off"

    @property
    def audit(self) -> AuditMode:
        """The declaration audit's mode for the calls this runner runs."""
        return self._auditor.mode

    @property
    def suspend_point(self) -> SuspendPoint | None:
        """The run's suspension state, if it has one."""
        return self._suspend

    @property
    def always(self) -> tuple[tuple[str, str | None], ...]:
        """The "always" approvals given so far (a suspension carries them on)."""
        return self._gate.always

    @property
    def mode(self) -> PermissionMode:
        """The permission mode; may be changed between batches."""
        return self._gate.mode

    @mode.setter
    def mode(self, mode: PermissionMode) -> None:
        self._gate.mode = mode

    @property
    def replacements(self) -> Mapping[str, str]:
        """Call key (`ToolCall.ref`) → replacement text of every persisted result."""
        return self._ledger.view()

    def replacement_for(self, ref: str) -> str | None:
        """The sticky replacement of the call `ref`'s result, or None if never replaced.

        `ref` is the call's `ToolCall.ref`: its key when the loop set one, else its
        id. Re-render history with it: once replaced, a result must look the same
        in every later request (prompt-cache stability).
        """
        return self._ledger.get(ref)

    def statistics(self) -> RunnerStatistics:
        """Counters since creation."""
        return RunnerStatistics(
            calls=self._calls,
            errors=self._errors,
            timeouts=self._timeouts,
            threads_left=self._threads_left,
            persisted=len(self._ledger),
        )

    def take_signals(self) -> BatchSignals:
        """What hooks and tools asked for since the last call, in call order; then reset.

        Call order is the order of the last `finish_batch`; entries of calls not
        in it come last.
        """
        return self._signals.take()

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
        keys = [r.call_id for r in results] if calls is None else [c.ref for c in calls]
        self._signals.set_order(keys)
        return enforce_batch_budget(
            results,
            self._config.batch_result_chars,
            ledger=self._ledger,
            results_dir=self._state.results_dir,
            preview_chars=self._config.preview_chars,
            keys=keys,
            exempt=self._exempt(calls or ()),
        )

    def _exempt(self, calls: Sequence[ToolCall]) -> set[int]:
        """Positions of calls whose tool is never persisted (it pages, like `read`)."""
        exempt: set[int] = set()
        for index, call in enumerate(calls):
            tool = self._registry.get(call.name)
            if tool is not None and tool.max_result_chars is None:
                exempt.add(index)
        return exempt

    async def __call__(self, call: ToolCall) -> ToolResult:  # noqa: C901, PLR0915 (one frame per call)
        """Run `call` and return its result. Never raises, except cancellation.

        The common call runs whole in this one coroutine (no coroutine per
        stage): a stage that cannot change the answer is not entered, and the
        tool's own call is awaited here unless a timeout or the audit wraps it
        (tests/execution/test_fast_paths.py shows each skipped stage would
        have answered the same).
        """
        suspend = self._suspend
        if suspend is not None and suspend.tripped:
            return suspend.hold(call)  # nothing starts once a call waits for a person
        self._calls += 1
        reporter: ProgressReporter | None = None
        deadline = self._deadline
        try:
            try:
                if (
                    deadline is not None
                    and deadline.remaining(anyio.current_time()) <= 0
                ):
                    raise _Answered(deadline.not_run(call))
                tool = self._registry.get(call.name)
                if tool is None:
                    self._unknown(call)
                if call.raw_arguments is not None:
                    raise _not_json(tool, call.raw_arguments)
                try:
                    args = tool.parse(call.input)
                except Exception as exc:
                    raise _invalid_input(tool, exc) from exc
                if self._progress_sink is None:
                    ctx = ToolContext(call, self._state)
                else:
                    reporter = ProgressReporter(
                        call.id, self._progress_sink, key=call.key
                    )
                    ctx = ToolContext(call, self._state, progress=reporter)
                hooks = (
                    self._hooks
                    if self._hooks is not None and self._hooks.has_tool_hooks
                    else None
                )
                pre = (
                    hooks.pre_hooks_for((tool.name, *tool.aliases))
                    if hooks is not None
                    else ()
                )
                if (
                    pre
                    or type(tool).validate_input is not Tool.validate_input
                    or not self._gate.allows_at_once(tool, None)
                ):
                    args = await (
                        self._admit(tool, call, args, ctx, pre)
                        if deadline is None
                        else self._admit_by(deadline, tool, call, args, ctx, pre)
                    )
                timeout = (
                    tool.timeout
                    if tool.timeout is not None
                    else self._config.default_timeout
                )
                if self._before_start is not None:
                    await self._pass_barrier(self._before_start, tool, call)
                bound_from: float | None = None  # set when the deadline bounds the tool
                if deadline is not None:
                    now = anyio.current_time()
                    left = deadline.remaining(now)
                    if left <= 0:
                        raise _Answered(deadline.not_run(call))
                    if timeout is None or left < timeout:
                        timeout, bound_from = left, now
                if self._on_event is not None:
                    emit_safely(
                        self._on_event,
                        ToolRunning(
                            call.id,
                            key=call.key,
                            interrupt="block"
                            if tool.interrupt is Interrupt.BLOCK
                            else "cancel",
                        ),
                    )
                executed: Executed | None
                if timeout is None and self._unaudited:
                    # call_tool's steps, inline (one coroutine fewer per call)
                    try:
                        output = await tool.call(args, ctx)
                    except BaseException as exc:
                        executed = failure_of(tool, exc)
                        if executed is None:
                            raise
                    else:
                        # A str without hooks: _settle would only map it
                        # (_to_result's steps, inline; _mapped's answer for a
                        # non-empty str without the call).
                        if hooks is None and type(output) is str:
                            executed = None
                            result = (
                                ToolResult(call.id, output, False)
                                if output.strip()
                                else self._mapped(tool, call, output, None)
                            )
                        else:
                            executed = returned(output)
                else:
                    executed = await self._executed(tool, call, args, ctx, timeout)
                    if bound_from is not None and executed.timed_out:
                        assert deadline is not None
                        executed = replace(
                            executed,
                            error=deadline.cut(
                                tool.name,
                                anyio.current_time() - bound_from,
                                thread_left=executed.thread_left,
                            ),
                        )
                if executed is None:
                    if tool.max_result_chars is not None:
                        result = await self._persisted(tool, call, result)
                elif deadline is None:
                    result = await self._settle(tool, call, args, executed, hooks)
                else:
                    result = await self._settle_by(
                        deadline, tool, call, args, executed, hooks
                    )
            finally:
                if reporter is not None:
                    reporter.close()
        except _Answered as answered:
            result = answered.result
        except CallFailed as failed:
            if failed.warning is not None:
                self._warn(failed.warning)
            result = ToolResult(
                call.id,
                failed.message,
                is_error=True,
                synthetic=failed.synthetic,
                context_modifier=failed.modifier,
            )
        except Exception as exc:  # a bug in toolweave must not break the batch
            logger.exception("internal error while running call %s", call.id)
            message = f"Internal error in toolweave while running this call: {exc!r}"
            result = ToolResult(call.id, message, is_error=True)
        if result.is_error:
            self._errors += 1
        content = result.content
        if type(content) is str and content.isascii():
            return result  # utf8_safe's common case, without the call
        return utf8_safe(result)

    @staticmethod
    async def _pass_barrier(barrier: StartBarrier, tool: Tool, call: ToolCall) -> None:
        """Await `barrier`; raise the call's answer if it must not start."""
        try:
            refusal = await barrier(call)
        except anyio.get_cancelled_exc_class():
            # Level-triggered: an outer cancel fires again at the next checkpoint.
            message = _BARRIER_CUT.format(tool=tool.name)
            raise _Answered(
                ToolResult(call.id, message, is_error=True, synthetic=True)
            ) from None
        except Exception as exc:
            logger.exception("the start barrier of call %s failed", call.id)
            refusal = f"its start could not be recorded ({exc!r}), so it never started"
        if refusal is not None:
            raise _Answered(
                ToolResult(
                    call.id, f"Not run: {refusal}.", is_error=True, synthetic=True
                )
            )

    async def _executed(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        ctx: ToolContext,
        limit: float | None,
    ) -> Executed:
        """The tool's call under its timeout `limit` and/or the declaration audit."""
        auditor = self._auditor
        if auditor.mode == "off":
            return await execute(tool, args, ctx, limit)
        # Auditor.run's steps, inline: no extra coroutine or call per call.
        # With a timeout, execute() abandons the call's threads anyway.
        abandons = True if limit is not None else None
        scope = AuditScope(call.id, tool, args, auditor.enforce, abandons)
        try:
            executed = await execute(tool, args, ctx, limit, zone=scope)
        finally:
            breached = scope.end() and auditor.report(scope, call, self._on_event)
        if breached:
            executed = auditor.settle(scope, executed)
        return executed

    async def _settle(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        executed: Executed,
        hooks: Hooks | None,
    ) -> ToolResult:
        """The result of a call that ran: failure, or success (then its hooks)."""
        if executed.error is not None:
            return await self._failed(tool, call, args, executed, hooks)
        if hooks is None and executed.stop is None:  # _succeeded has nothing to add
            return await self._to_result(tool, call, executed.output, executed.modifier)
        return await self._succeeded(tool, call, args, executed, hooks)

    async def _admit(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        ctx: ToolContext,
        pre: tuple[PreToolUseHook, ...],
    ) -> dict[str, object]:
        """Validation, PreToolUse hooks, permission: the input the call may run with.

        Raises `CallFailed` or `_Answered` when a stage refuses the call.
        """
        if type(tool).validate_input is not Tool.validate_input:
            await self._validate(tool, args, ctx)
        verdict: HookVerdict | None = None
        if pre:
            args, verdict = await self._pre_hooks(pre, tool, call, args, ctx)
        if not self._gate.allows_at_once(tool, verdict):
            await self._gate.authorize(tool, call, args, ctx, verdict)
        return args

    async def _admit_by(
        self,
        deadline: RunDeadline,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        ctx: ToolContext,
        pre: tuple[PreToolUseHook, ...],
    ) -> dict[str, object]:
        """`_admit`, cut at `deadline`: a call cut before it started is answered "not run"."""
        with anyio.CancelScope(deadline=deadline.at) as scope:
            try:
                return await self._admit(tool, call, args, ctx, pre)
            except _Answered:  # a stage's own answer to the cut: say why it came
                if not scope.cancel_called:
                    raise
            except CallFailed as failed:  # the permission stage's own "not run"
                if not (failed.synthetic and scope.cancel_called):
                    raise
        raise _Answered(deadline.not_run(call))

    async def _settle_by(
        self,
        deadline: RunDeadline,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        executed: Executed,
        hooks: Hooks | None,
    ) -> ToolResult:
        """`_settle` within the deadline's grace: the tool ran, so whatever is cut says so."""
        with anyio.CancelScope(deadline=deadline.at + deadline.grace) as scope:
            return await self._settle(tool, call, args, executed, hooks)
        assert scope.cancelled_caught
        if executed.error is not None:
            text = executed.error
        else:  # fail closed, as an interrupt in PostToolUse hooks does
            text = _POST_HOOKS_CUT.format(tool=tool.name)
        return ToolResult(
            call.id, text, is_error=True, context_modifier=executed.modifier
        )

    # -- stages ----------------------------------------------------------------

    def _warn(self, message: str) -> None:
        if self._on_event is not None:
            emit_safely(self._on_event, WarningEvent(message))

    def _unknown(self, call: ToolCall) -> NoReturn:
        """Raise the answer to a call of a tool the registry does not have."""
        message = f"Unknown tool {call.name!r}."
        close = [
            name
            for name in self._registry.closest(call.name)
            if not getattr(self._registry.get(name), "hidden", True)
        ]
        if close:
            message += " Did you mean: " + ", ".join(repr(n) for n in close) + "?"
        known = [t.name for t in self._registry.visible()][:_MAX_LISTED_TOOLS]
        message += " Available tools: " + (", ".join(known) or "(none)") + "."
        raise CallFailed(message)

    async def _validate(
        self, tool: Tool, args: dict[str, object], ctx: ToolContext
    ) -> None:
        try:
            problem = await tool.validate_input(args, ctx)
        except Exception as exc:
            raise CallFailed(f"Invalid input for tool {tool.name!r}: {exc}") from exc
        if problem is not None:
            raise CallFailed(problem)

    async def _succeeded(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        executed: Executed,
        hooks: Hooks | None,
    ) -> ToolResult:
        """Map, persist, record a stop, then PostToolUse (or Failure for an error result)."""
        result = await self._to_result(tool, call, executed.output, executed.modifier)
        if executed.stop is not None:
            self._signals.add_stop(call.ref, executed.stop)
        if hooks is None:
            return result
        if result.is_error:
            return await self._failure_hooks(
                hooks, tool, call, args, result, result.text
            )
        post = hooks.post_hooks_for((tool.name, *tool.aliases))
        if not post:
            return result
        data = PostToolUseInput(
            call=call,
            tool_name=tool.name,
            input=args,
            output=executed.output,
            result=result,
        )
        replace = (
            self._replacer(tool, call, executed) if tool.replaceable_output else None
        )
        try:
            return await run_post_hooks(
                post, data, signals=self._signals, replace=replace, warn=self._warn
            )
        except CallFailed as failed:
            # The tool ran: its context change happened whatever the hook did.
            failed.modifier = executed.modifier
            raise
        except anyio.get_cancelled_exc_class():
            # Interrupted while its PostToolUse hooks ran: the tool *finished*, so
            # "stopped before it finished" would be untrue and its context change
            # would be lost. Answer so, keep the change, and withhold the output
            # (fail closed: an unfinished hook may have had to redact it).
            # Cancellation is level-triggered: an outer cancel fires again at the
            # caller's next checkpoint, so nothing is swallowed for good.
            return ToolResult(
                call.id,
                _POST_HOOKS_CUT.format(tool=tool.name),
                is_error=True,
                context_modifier=executed.modifier,
            )

    async def _pre_hooks(
        self,
        hooks: tuple[PreToolUseHook, ...],
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        ctx: ToolContext,
    ) -> tuple[dict[str, object], HookVerdict | None]:
        scheduled = args

        async def revalidate(raw: Mapping[str, object]) -> dict[str, object]:
            try:
                new = tool.parse(raw)
            except Exception as exc:
                raise CallFailed(
                    f"A PreToolUse hook rewrote the input into an invalid one: {exc}"
                ) from exc
            problem = rewrite_scope_error(tool, scheduled, new)
            if problem is not None:
                raise CallFailed(
                    f"A PreToolUse hook's input rewrite was refused: {problem}."
                )
            await self._validate(tool, new, ctx)
            return new

        try:
            return await run_pre_hooks(
                hooks,
                call,
                tool.name,
                args,
                signals=self._signals,
                revalidate=revalidate,
            )
        except anyio.get_cancelled_exc_class():
            # Cut before the tool started: say so (not "effects unknown").
            # Level-triggered: an outer cancel fires again at the caller's
            # next checkpoint.
            message = _PRE_HOOKS_CUT.format(tool=tool.name)
            raise _Answered(
                ToolResult(call.id, message, is_error=True, synthetic=True)
            ) from None

    async def _to_result(
        self,
        tool: Tool,
        call: ToolCall,
        output: object,
        modifier: Callable[[], object] | None,
    ) -> ToolResult:
        """Map output to content, pad an empty one, persist a large one."""
        result = self._mapped(tool, call, output, modifier)
        if tool.max_result_chars is None:
            return result  # made UTF-8-safe by __call__, like every result
        return await self._persisted(tool, call, result)

    def _mapped(
        self,
        tool: Tool,
        call: ToolCall,
        output: object,
        modifier: Callable[[], object] | None,
    ) -> ToolResult:
        """Map output to content and pad an empty one."""
        content: Content
        if type(output) is str:  # most tools: no mapping needed
            content, is_error = output, False
            if not output.strip():
                content = empty_placeholder(tool.name)
        else:
            content, is_error = to_content(output)
            if is_empty(content):
                content = empty_placeholder(tool.name)
        return ToolResult(call.id, content, is_error, context_modifier=modifier)

    async def _persisted(
        self, tool: Tool, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        """`result`, or its preview once persisted if over the tool's threshold.

        Only for a tool with a `max_result_chars` (None = never persisted).
        """
        limit = tool.max_result_chars
        assert limit is not None
        result = utf8_safe(result)  # before the ledger records a preview of it
        threshold = min(limit, self._config.max_result_chars)
        return await persist_if_large(
            result,
            threshold,
            ledger=self._ledger,
            results_dir=self._state.results_dir,
            # a preview never exceeds the threshold it stands in for
            preview_chars=max(1, int(min(self._config.preview_chars, threshold))),
            key=call.ref,
        )

    def _replacer(
        self, tool: Tool, call: ToolCall, executed: Executed
    ) -> Callable[[object], Awaitable[ToolResult]]:
        async def replace(output: object) -> ToolResult:
            self._ledger.discard(call.ref)
            return await self._to_result(tool, call, output, executed.modifier)

        return replace

    async def _failed(
        self,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        executed: Executed,
        hooks: Hooks | None,
    ) -> ToolResult:
        error = executed.error or "failed"
        if executed.timed_out:
            self._timeouts += 1
        if executed.thread_left:
            self._threads_left += 1
            self._warn(f"call {call.id} ({tool.name}): {error}")
        result = ToolResult(
            call.id, error, is_error=True, context_modifier=executed.modifier
        )
        if hooks is None:
            return result
        return await self._failure_hooks(hooks, tool, call, args, result, error)

    async def _failure_hooks(
        self,
        hooks: Hooks,
        tool: Tool,
        call: ToolCall,
        args: dict[str, object],
        result: ToolResult,
        error: str,
    ) -> ToolResult:
        failure = hooks.failure_hooks_for((tool.name, *tool.aliases))
        if failure:
            data = PostToolUseFailureInput(
                call=call, tool_name=tool.name, input=args, error=error, result=result
            )
            try:
                await run_failure_hooks(failure, data, signals=self._signals)
            except CallFailed as failed:
                failed.modifier = result.context_modifier
                raise
            except anyio.get_cancelled_exc_class():
                # The tool ran and failed; only its hooks were cut: its own error
                # result is the truth (level-triggered: an outer cancel fires
                # again at the caller's next checkpoint).
                return result
        return result
