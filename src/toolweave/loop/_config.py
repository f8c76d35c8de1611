"""AgentConfig: every knob of a run, each with a safe default."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._exceptions import ConfigError
from ..execution import AuditMode, ExecutionConfig, PermissionMode, check_audit_mode
from ..scheduling import ConcurrencyConfig
from ..tools import SandboxMode, sandbox_mode
from ..tools.builtin import parse_prefixes
from ._context import ContextProvider
from ._cost import PriceTable
from ._micro import MicroCompaction
from ._tracing import TracePolicy

if TYPE_CHECKING:
    from ..execution import AskHandler, Hooks, PermissionRules
    from ..models import Model, RetryPolicy
    from ..scheduling import Dispatcher

__all__ = ["AgentConfig"]


def _positive(name: str, value: float | None) -> None:
    if value is not None and not (value > 0 and not math.isnan(value)):
        raise ConfigError(f"{name} must be positive or None, got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """How an Agent runs: budgets, guards, context, cost, tools and tracing.

    Every field has a safe default; an unset budget is unlimited. Budgets are
    hard stops checked before each model call (tokens, cost) or enforced while
    it runs (wall clock); they win over the soft compaction threshold.

    Raises:
        ConfigError: if a value is out of range.
    """

    max_iterations: int = 50
    """Model calls a run may make; reaching it ends the run as MAX_ITERATIONS."""
    concurrency: ConcurrencyConfig = field(default_factory=ConcurrencyConfig)
    """How tool calls overlap (policy, caps, streaming overlap)."""
    max_cost_usd: float | None = None
    """USD the run may spend (priced by `prices`); ends as COST_BUDGET_EXCEEDED."""
    max_total_tokens: int | None = None
    """Tokens (input, cached, output) the run may use; ends as BUDGET_EXCEEDED."""
    max_wall_clock: float | None = None
    """Seconds the run may last (BUDGET_EXCEEDED): a bound, not an interrupt. At it a
    model call is abandoned, running tools are cut as at their timeout (BLOCK too),
    calls not started are answered "not run" (`toolweave.execution.RunDeadline`)."""
    max_output_tokens: int = 4_096
    """Cap on the tokens of one model response (the request's ``max_tokens``)."""
    temperature: float | None = None
    """Sampling temperature; None = the provider's default."""
    parallel_tool_calls: bool = True
    """Tell the model it may return several tool calls at once (request side only)."""
    compaction_threshold: float | None = 0.8
    """Share of the model's context window at which the conversation is compacted.

    None turns auto-compaction off (prompt-too-long recovery still compacts).
    Needs the model's `context_window`; without one it never triggers.
    """
    context_warning_threshold: float | None = 0.7
    """Share of the context window at which the next request earns a Warning event
    (once, until the context shrinks below it again); None = no warning. Whatever
    the thresholds, a request that does not fit the window with room for the answer
    (`max_output_tokens`, at most a quarter of the window) is never sent: the
    conversation is shrunk first, or the run ends as CONTEXT_WINDOW_EXCEEDED."""
    micro_compaction: MicroCompaction | None = None
    """Clear old tool results to short stubs (`MicroCompaction`); None = off (the default:
    see docs/context-window.md for why)."""
    compaction_keep_recent: int = 6
    """Messages kept verbatim at the end when compacting."""
    compaction_max_failures: int = 3
    """Consecutive auto-compaction failures that open the circuit breaker for the run."""
    compaction_model: Model | str | None = None
    """The model that writes summaries; None = the agent's model."""
    stall_limit: int = 3
    """Consecutive iterations whose every tool result is an error that end the run (ERROR)."""
    repeat_failure_limit: int | None = 3
    """Identical failures of one tool with the same arguments before it is refused; None = off."""
    hooks: Hooks | None = None
    """PreToolUse / PostToolUse / Stop hooks."""
    permissions: PermissionRules | None = None
    """Allow / ask / deny rules."""
    permission_mode: PermissionMode = PermissionMode.DEFAULT
    """The permission mode."""
    ask: AskHandler | None = None
    """Async handler for permission asks; None = an ask is denied, with an error
    result naming the rule or mode that would allow the call. In the default
    mode the built-in tools ask for a bash command not proven read-only, a
    write or edit, and a web_fetch to a host not yet allowed."""
    on_ask: Literal["deny", "suspend"] = "deny"
    """What an ask does when there is no `ask` handler (a web service, a batch,
    a queue worker). ``"deny"`` (the default: a run that nobody will resume
    must not sit waiting): the call is denied with an error result naming the
    setting that would allow it, and the run goes on. ``"suspend"``: the run
    stops with `CompletionReason.SUSPENDED`, `RunResult.pending` lists the calls
    that wait, and ``Agent.resume(result.suspension, decisions)`` (or, stored,
    ``toolweave resume ID --approve KEY``) continues exactly where it stopped.
    See docs/human-in-the-loop.md."""
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    """Timeouts and result budgets of each call."""
    context_providers: Sequence[ContextProvider] = ()
    """Context providers run at the start of each run (see `ContextAssembler`)."""
    prices: PriceTable | None = None
    """The price table; None = the built-in table."""
    tracing: TracePolicy = field(default_factory=TracePolicy)
    """OpenTelemetry tracing policy."""
    workspace: Path | None = None
    """Root for file tools and context providers."""
    results_dir: Path | None = None
    """Where large tool results are saved (``<results_dir>/tool-results/<id>@<key>.txt``).

    None = a fresh temporary directory owned by the Agent, removed by
    `Agent.aclose`, when the Agent is garbage-collected, or at interpreter exit.
    The CLI and `run_batch` set one next to the session store, so saved results
    outlive the process and a resumed session still finds them.
    """
    dispatcher: Dispatcher | None = None
    """A Dispatcher shared with other agents (the host cap); None = one per run."""
    retry: RetryPolicy | None = None
    """Backoff, Retry-After clamp and fallback threshold of model calls; None = defaults."""
    fallback_models: Sequence[Model | str] = ()
    """Models to switch to when the agent's model keeps failing."""
    audit: AuditMode = "off"
    """The declaration audit of in-process tool calls: ``"off"`` (no hook installed),
    ``"warn"`` (a `DeclarationViolation` event per write, process start or connect
    the call's declaration does not cover) or ``"enforce"`` (the operation raises
    PermissionError inside the tool and the call ends with an error naming it)."""
    sandbox: SandboxMode | Literal["read-only", "workspace-write", "off"] | None = None
    """Sandbox mode of every bash call: ``"read-only"``, ``"workspace-write"`` or
    ``"off"`` (a `SandboxMode`); None = the bash tool's own (workspace-write by
    default). Calls proven read-only always run read-only."""

    read_only_commands: Sequence[str] = ()
    """Extra read-only command prefixes for the bash tool (``"bd show"``,
    ``"gh api --method GET"``, ``"mise tasks ls"``): the Agent teaches them to
    every `BashTool` it is given (`BashTool.teach`). A command starting with one
    (whole words) may run in parallel, in the read-only sandbox; with no sandbox
    backend they are ignored."""

    def __post_init__(self) -> None:  # noqa: C901 - one check per field
        check_audit_mode(self.audit)
        if self.on_ask not in ("deny", "suspend"):
            raise ConfigError(
                f'on_ask must be "deny" or "suspend", got {self.on_ask!r}'
            )
        parse_prefixes(self.read_only_commands)  # raises ConfigError if malformed
        object.__setattr__(self, "read_only_commands", tuple(self.read_only_commands))
        if self.sandbox is not None:
            object.__setattr__(self, "sandbox", sandbox_mode(self.sandbox))
        if self.max_iterations < 1:
            raise ConfigError(f"max_iterations must be >= 1, got {self.max_iterations}")
        for name in ("max_cost_usd", "max_wall_clock"):
            _positive(name, getattr(self, name))
        if self.max_total_tokens is not None and self.max_total_tokens < 1:
            raise ConfigError("max_total_tokens must be >= 1 or None")
        if self.max_output_tokens < 1:
            raise ConfigError("max_output_tokens must be >= 1")
        threshold = self.compaction_threshold
        if threshold is not None and not 0 < threshold <= 1:
            raise ConfigError(
                f"compaction_threshold must lie in (0, 1], got {threshold}"
            )
        warn = self.context_warning_threshold
        if warn is not None and not 0 < warn <= 1:
            raise ConfigError(
                f"context_warning_threshold must lie in (0, 1], got {warn}"
            )
        if self.micro_compaction is not None and not isinstance(
            self.micro_compaction, MicroCompaction
        ):
            raise ConfigError("micro_compaction must be a MicroCompaction or None")
        if self.compaction_keep_recent < 2 or self.compaction_max_failures < 1:
            raise ConfigError(
                "compaction_keep_recent must be >= 2 and max_failures >= 1"
            )
        if self.stall_limit < 1:
            raise ConfigError("stall_limit must be >= 1")
        if self.repeat_failure_limit is not None and self.repeat_failure_limit < 1:
            raise ConfigError("repeat_failure_limit must be >= 1 or None")
