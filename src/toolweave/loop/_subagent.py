"""Sub-agents: a tool that runs a child Agent as one call (as in OpenClaw).

A sub-agent call claims the union of what its tools may touch (fail closed), so
read-only children fan out under the parent Dispatcher's caps while a child that
can write runs exclusive against every call it conflicts with; each child has its
own tools, budget and timeout. A
child that fails, runs out of budget or time gives an *error* result whose text
starts with ``[sub-agent failed]``; its siblings' results are unaffected.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, final

import anyio
from pydantic import BaseModel, Field

from .._exceptions import ConfigError, ToolError, ToolTimeoutError
from ..events import (
    CompletionReason,
    DeclarationViolation,
    Event,
    IterationStarted,
    ToolUseStarted,
)
from ..execution import audit_mode_here, outside_audit
from ..models import Model, resolve_model
from ..tools import (
    Access,
    Concurrency,
    Interrupt,
    Tool,
    ToolContext,
    ToolRegistry,
    Warrant,
)
from ._agent import Agent
from ._config import AgentConfig
from ._result import RunResult

__all__ = ["ChildAgent", "SubAgentTool", "subagent"]

FAILURE_MARKER = "[sub-agent failed]"
"""How every error result of a sub-agent begins, so orchestrators can spot it."""

_GRACE = 5.0  # seconds between the child's own wall-clock stop and the hard cut


class SubAgentInput(BaseModel):
    """The input of a sub-agent call."""

    prompt: str = Field(
        description=(
            "The complete task for the sub-agent: it sees nothing else of this"
            " conversation."
        )
    )


def _progress(event: Event) -> str | None:
    if isinstance(event, DeclarationViolation):
        return f"declaration audit: {event.tool}: {event.operation} {event.target}"
    if isinstance(event, IterationStarted):
        return f"iteration {event.iteration}"
    if isinstance(event, ToolUseStarted):
        return f"calling {event.call.name}"
    return None


@dataclass(frozen=True, slots=True)
class ChildAgent:
    """What each call of a sub-agent runs: a fresh Agent made of these, with a deadline."""

    model: Model
    """The child's model, resolved once so its connections are reused across calls."""
    tools: tuple[Tool, ...] | ToolRegistry
    """The child's tools."""
    system: str | None
    """The child's system prompt."""
    config: AgentConfig
    """The child's config (budgets included)."""
    timeout: float
    """Seconds a child may run."""


@final
class SubAgentTool(Tool):
    """A tool whose call runs a child Agent to completion and returns its output.

    Built by `subagent`. `concurrency` None derives it from the child's tools;
    SEQUENTIAL makes every call a barrier.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        child: ChildAgent,
        concurrency: Concurrency | None,
        interrupt: Interrupt,
    ) -> None:
        self._exclusive = concurrency is Concurrency.SEQUENTIAL
        super().__init__(
            name=name,
            description=description,
            input_model=SubAgentInput,
            concurrency=self._concurrency,
            access=self._access,
            interrupt=interrupt,
            # the child reports its own timeout first
            timeout=child.timeout + 2 * _GRACE,
            max_result_chars=None,
        )
        self.child = child
        """What each call runs."""
        self.child_model = child.model
        """The child's model (`ChildAgent.model`)."""
        self.child_tools = child.tools
        """The child's tools."""
        self.child_system = child.system
        """The child's system prompt."""
        self.child_config = child.config
        """The child's config (budgets included)."""
        self.child_timeout = child.timeout
        """Seconds a child may run."""
        self.results: list[RunResult] = []
        """The result of every child run, in completion order (for inspection)."""

    def bound_access(self) -> Access:
        """The union of the child's tools' bounds (read when the call is scheduled).

        Declared SEQUENTIAL: a barrier. Tools registered later are seen by the
        next call, since the union is taken each time.
        """
        if self._exclusive:
            return Access.barrier()
        reads: dict[str, None] = {}
        writes: dict[str, None] = {}
        for child_tool in self.child_tools:
            bound = child_tool.bound_access()
            reads.update(dict.fromkeys(bound.reads))
            writes.update(dict.fromkeys(bound.writes))
        return Access(reads=reads, writes=writes)

    @property
    def warrant(self) -> Warrant:
        """The weakest warrant among the child's tools (its SAFE rests on their claims).

        USER when every child tool's claim is vouched; an AUDITED child counts
        as vouched where the child's audit enforces (its own ``audit``, or the
        parent's when it has none). Read like `bound_access`, each time.
        """
        audit = self.child_config.audit
        weakest = Warrant.USER
        for child_tool in self.child_tools:
            warrant = child_tool.warrant
            if warrant is Warrant.AUDITED and audit == "enforce":
                continue
            if warrant is Warrant.UNVOUCHED or (
                warrant is Warrant.AUDITED and audit == "warn"
            ):
                return Warrant.UNVOUCHED
            if warrant is Warrant.AUDITED:
                weakest = Warrant.AUDITED
        return weakest

    def _access(self, args: dict[str, Any]) -> Access:
        del args  # the child's calls are not known yet: claim all it could make
        return self.bound_access()

    def _concurrency(self, args: dict[str, Any]) -> Concurrency:
        """SAFE only if no child tool can write anything."""
        return Concurrency.SEQUENTIAL if self._access(args).writes else Concurrency.SAFE

    def _child(self, ctx: ToolContext) -> Agent:
        """A fresh child; it saves large results in a folder of the parent's results dir.

        So a path the child's answer mentions stays readable after the child
        closed (a child with its own ``config.results_dir`` keeps that one).
        """
        wall = self.child_config.max_wall_clock
        budget = self.child_timeout if wall is None else min(wall, self.child_timeout)
        results = self.child_config.results_dir
        parent = ctx.state.results_dir
        if results is None and parent is not None:
            results = parent / "subagents" / uuid.uuid4().hex
        audit = self.child_config.audit
        if audit == "off":  # audited parent call: its child's calls are audited too
            audit = audit_mode_here()
        config = dataclasses.replace(
            self.child_config, max_wall_clock=budget, results_dir=results, audit=audit
        )
        return Agent(
            self.child_model,
            self.child_tools,
            system=self.child_system,
            config=config,
            name=self.name,
        )

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        """Run the child on `args["prompt"]`; its output, or a ToolError marked as a failure."""
        child = self._child(ctx)
        # The child's model calls and bookkeeping are the runtime's, not this
        # tool's; its own tool calls are audited one by one (see `_child`).
        with outside_audit():
            result = await self._run_child(child, args["prompt"], ctx)
        if result is None:
            raise ToolTimeoutError(
                f"{FAILURE_MARKER} {self.name} did not finish within {self.child_timeout:g} s"
            )
        self.results.append(result)
        if result.completion_reason is CompletionReason.COMPLETED:
            return result.output
        raise ToolError(_failure_text(self.name, result, self.child_timeout))

    async def _run_child(
        self, child: Agent, prompt: str, ctx: ToolContext
    ) -> RunResult | None:
        """The child's result, or None if it did not finish in time."""
        result: RunResult | None = None
        try:
            with anyio.move_on_after(self.child_timeout + _GRACE):
                async with child.open_run(prompt) as run:
                    async for event in run.events():
                        message = _progress(event)
                        if message is not None:
                            ctx.report_progress(f"{self.name}: {message}")
                result = run.result
        finally:
            with anyio.CancelScope(shield=True):
                await child.aclose()  # models its config named by string
        return result


def _failure_text(name: str, result: RunResult, timeout: float) -> str:
    reason = result.completion_reason
    if reason is CompletionReason.BUDGET_EXCEEDED and "wall-clock" in result.detail:
        why = f"timed out after {timeout:g} s"
    else:
        why = f"ended as {reason.value}: {result.detail}"
    text = f"{FAILURE_MARKER} {name} {why}"
    if result.output:
        text += f"\nPartial output:\n{result.output}"
    return text


def subagent(
    name: str,
    description: str,
    *,
    model: Model | str,
    tools: Iterable[Tool] | ToolRegistry = (),
    system: str | None = None,
    config: AgentConfig | None = None,
    timeout: float = 300.0,
    concurrency: Concurrency | None = None,
    interrupt: Interrupt = Interrupt.CANCEL,
) -> SubAgentTool:
    """A tool that delegates a task to a child Agent with its own tools, budget and timeout.

    The call's input is ``{"prompt": str}``; its result is the child's final
    answer. Anything but COMPLETED (an error, a spent budget, ``timeout``
    seconds passing) is an error result beginning with ``[sub-agent failed]``.
    The child's usage and cost are added to the parent run's.

    Scheduling fails closed: a call claims the union of its tools'
    `Tool.bound_access` (what any of their calls may touch). Children whose
    tools only read run at once under the parent's caps; a child whose tools
    can write (or declare no bound) is SEQUENTIAL and runs exclusive against
    every call it conflicts with.

    Args:
        name: The tool's name.
        description: What the model is told the sub-agent does.
        model: The child's model (a Model or a provider string).
        tools: The child's tools.
        system: The child's system prompt.
        config: The child's config (its own budgets); None = defaults.
        timeout: Seconds a child may run before it is stopped.
        concurrency: None (default) derives it from the tools as above;
            ``Concurrency.SEQUENTIAL`` makes every call a barrier.
            ``Concurrency.SAFE`` cannot loosen the derived claim (fail closed).
        interrupt: CANCEL (default) stops the child on a user interrupt.
    """
    if timeout <= 0:
        raise ConfigError("timeout must be positive")
    child = ChildAgent(
        model=resolve_model(model),
        tools=tools if isinstance(tools, ToolRegistry) else tuple(tools),
        system=system,
        config=config or AgentConfig(),
        timeout=timeout,
    )
    return SubAgentTool(
        name=name,
        description=description,
        child=child,
        concurrency=concurrency,
        interrupt=interrupt,
    )
