"""From settings to runtime objects: the model, the agent config, MCP servers, access."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from .._exceptions import ConfigError
from ..execution import AskHandler, Hooks, PermissionMode, PermissionRules
from ..loop import AgentConfig, PriceTable, unpriced_model
from ..messages import ToolCall, Usage
from ..models import Model, resolve_model
from ..scheduling import ConcurrencyConfig, classify
from ..sessions import AccessDescriber, AccessRecord, Pricer
from ..tools import ToolRegistry
from ..tools.mcp import MCPServerConfig
from ._settings_model import MCPServerSettings, Settings

__all__ = [
    "NO_MODEL_HELP",
    "agent_config",
    "build_model",
    "coding_system_prompt",
    "describe_access",
    "mcp_configs",
    "pricer",
    "warning_words",
]

NO_MODEL_HELP = (
    "no model configured: pass --model anthropic:NAME (or openai:NAME, or"
    " openai-compatible:NAME with --base-url), set `model` in toolweave.toml or"
    " ~/.toolweave/config.toml, or set TOOLWEAVE_MODEL. `toolweave demo` needs no model."
)


def build_model(settings: Settings) -> Model:
    """The model the settings name. Keys come from the providers' usual variables.

    An ``openai-compatible:`` server gets ``$OPENAI_API_KEY`` if set, else a
    placeholder key (local servers rarely check it); so does an ``openai:``
    model its class takes for a compatible server (a ``--base-url`` that is not
    OpenAI's, a name not of OpenAI's families). ``stream = false`` (or
    ``--no-stream``) sends every request whole.

    Raises:
        ConfigError: if no model is configured, the spec is invalid, or the
            provider's key variable is not set.
    """
    spec = settings.model
    if not spec:
        raise ConfigError(NO_MODEL_HELP)
    api_key = None
    if spec.startswith("openai-compatible:"):
        api_key = os.environ.get("OPENAI_API_KEY") or "not-needed"
    model = resolve_model(
        spec, api_key=api_key, base_url=settings.base_url, stream=settings.stream
    )
    if api_key is None and not getattr(model, "compatible", False):
        _require_key(spec, type(model).__name__)
    return model


_KEY_VARIABLES = {
    "AnthropicModel": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "OpenAIChatModel": ("OPENAI_API_KEY",),
    "OpenAIResponsesModel": ("OPENAI_API_KEY",),
}


def _require_key(spec: str, model_class: str) -> None:
    """Fail before anything is stored when the provider's key variable is unset.

    Without it the SDK fails only when the first request is built, after a
    session was created (the SDK reads the same variables).
    """
    variables = _KEY_VARIABLES.get(model_class, ())
    if variables and not any(os.environ.get(v) for v in variables):
        raise ConfigError(
            f"{variables[0]} is not set (the model {spec} needs it);"
            " `toolweave demo` needs no key."
        )


def coding_system_prompt(workspace: Path, extra: str | None) -> str:
    """The coding agent's system prompt."""
    prompt = (
        f"You are a careful coding agent working in the directory {workspace}. Use the"
        " tools to read, search, edit and run commands there. Independent reads and"
        " searches may be requested together in one response: they run in parallel."
        " Read a file before editing it. Finish with a short summary of what you did."
    )
    return f"{prompt}\n\n{extra}" if extra else prompt


def agent_config(
    settings: Settings,
    *,
    workspace: Path,
    hooks: Hooks | None,
    ask: AskHandler | None,
    mode: str | None = None,
    results_dir: Path | None = None,
) -> AgentConfig:
    """The AgentConfig of a CLI run. `mode` overrides the permission mode.

    `results_dir` is where large tool results are saved (the CLI passes the
    session's folder beside the store); None = a temporary one per agent.

    Raises:
        ConfigError: for an invalid rule or value.
    """
    perms = settings.permissions
    rules = PermissionRules(allow=perms.allow, ask=perms.ask, deny=perms.deny)
    c = settings.concurrency
    b = settings.budgets
    return AgentConfig(
        max_iterations=b.max_iterations,
        max_cost_usd=b.max_cost_usd,
        max_total_tokens=b.max_total_tokens,
        max_wall_clock=b.max_wall_clock,
        concurrency=ConcurrencyConfig(
            enabled=c.enabled,
            max_concurrency=c.max_concurrency,
            per_batch_max=c.per_batch_max,
            policy=c.policy,
            streaming_overlap=c.streaming_overlap,
        ),
        permissions=rules if rules else None,
        permission_mode=PermissionMode(mode or perms.mode),
        ask=ask,
        on_ask=perms.on_ask,
        hooks=hooks,
        workspace=workspace,
        results_dir=results_dir,
        read_only_commands=settings.bash.read_only_commands,
        audit=settings.audit,
    )


def _mcp_config(
    name: str, server: MCPServerSettings, workspace: Path
) -> MCPServerConfig:
    return MCPServerConfig(
        name=name,
        transport=server.transport,
        command=server.command,
        args=server.args,
        env=server.env,
        cwd=server.cwd or (str(workspace) if server.transport == "stdio" else None),
        url=server.url,
        headers=server.headers,
        trusted=server.trusted,
        touches=server.touches,
        timeout=server.timeout,
        startup_timeout=server.startup_timeout,
    )


def mcp_configs(
    servers: Mapping[str, MCPServerSettings], workspace: Path
) -> list[MCPServerConfig]:
    """The MCP server configs (stdio servers start in the workspace by default).

    Raises:
        ConfigError: if a server definition is inconsistent.
    """
    try:
        return [
            _mcp_config(name, server, workspace) for name, server in servers.items()
        ]
    except ConfigError as exc:
        raise ConfigError(f"mcp_servers: {exc}") from exc


def describe_access(registry: ToolRegistry) -> AccessDescriber:
    """What each call claims to touch, exactly as the scheduler's gate sees it."""

    def describe(call: ToolCall) -> AccessRecord:
        access = classify(call, registry).access
        return AccessRecord(access.reads, access.writes)

    return describe


def warning_words(model_spec: str) -> Callable[[str], str | None]:
    """How the terminal says a run's warnings for a run of `model_spec`.

    An unpriced model is said once, in the CLI's words; for scripted and
    local (openai-compatible) models, which cost nothing, it is not said.
    """
    free = model_spec.startswith(("scripted", "openai-compatible:"))

    def say(message: str) -> str | None:
        model = unpriced_model(message)
        if model is None:
            return message
        if free:
            return None
        return f"no price known for {model}: its cost is shown as $0"

    return say


def pricer(table: PriceTable | None = None) -> Pricer:
    """USD of a model call from the price table (unknown models cost 0)."""
    prices = table or PriceTable()

    def price(model: str, usage: Usage) -> float:
        found = prices.price_of(model)
        return found.cost(usage) if found is not None else 0.0

    return price
