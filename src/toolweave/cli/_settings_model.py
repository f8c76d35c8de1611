"""The settings schema: what `toolweave.toml` and ``~/.toolweave/config.toml`` may hold.

The ``[[hooks.*]]`` tables' schema (`HookSettings`) is the loop's: library
users and ``toolweave batch`` read the same hooks (`toolweave.loop.load_hook_settings`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..loop import HookCommand, HookSettings

__all__ = [
    "BashSettings",
    "BudgetSettings",
    "ConcurrencySettings",
    "HookCommand",
    "HookSettings",
    "MCPServerSettings",
    "PermissionSettings",
    "SandboxSettings",
    "Settings",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class ConcurrencySettings(BaseModel):
    """``[concurrency]``: how tool calls overlap (see `ConcurrencyConfig`)."""

    model_config = _STRICT

    enabled: bool = True
    policy: Literal["all_or_nothing", "partition", "rwlock", "conflict"] = "conflict"
    max_concurrency: int = Field(default=10, ge=1)
    per_batch_max: int | None = Field(default=None, ge=1)
    streaming_overlap: bool = True


class PermissionSettings(BaseModel):
    """``[permissions]``: the mode and Claude-Code-style allow / ask / deny rules."""

    model_config = _STRICT

    mode: Literal["default", "accept_edits", "bypass", "plan"] = "default"
    on_ask: Literal["deny", "suspend"] = "deny"
    """With nobody to ask (no terminal): deny the call, or suspend the session
    until ``toolweave resume ID --approve KEY`` / ``--deny KEY``."""
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()


class SandboxSettings(BaseModel):
    """``[sandbox]``: how the OS confines bash calls (see `SandboxMode`).

    Calls proven read-only always run read-only; `mode` applies to the rest.
    """

    model_config = _STRICT

    mode: Literal["read-only", "workspace-write", "off"] = "workspace-write"
    network: bool = True
    """False cuts the network of every confined bash call."""


class BashSettings(BaseModel):
    """``[bash]``: what the bash tool's classifier knows beyond its built-in table."""

    model_config = _STRICT

    read_only_commands: tuple[str, ...] = ()
    """Command prefixes that only read (``"bd show"``, ``"gh api --method GET"``):
    a command starting with one of them (whole words) may run in parallel, inside
    the read-only sandbox. Redirections, assignments and substitutions are still
    checked."""


class MCPServerSettings(BaseModel):
    """``[mcp_servers.NAME]``: one MCP server (see `MCPServerConfig`)."""

    model_config = _STRICT

    transport: Literal["stdio", "http"] = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    trusted: bool = False
    touches: tuple[str, ...] | None = None
    timeout: float | None = Field(default=None, gt=0)
    startup_timeout: float = Field(default=60.0, gt=0)


class BudgetSettings(BaseModel):
    """``[budgets]``: hard limits of one run."""

    model_config = _STRICT

    max_iterations: int = Field(default=50, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_wall_clock: float | None = Field(default=None, gt=0)


class Settings(BaseModel):
    """Every setting, each with a safe default."""

    model_config = _STRICT

    model: str | None = None
    """A model spec such as ``anthropic:claude-sonnet-4-5``."""
    base_url: str | None = None
    """The server of an ``openai-compatible:`` model (or a proxy)."""
    stream: bool = True
    """Stream model responses. False sends each request whole (no streaming
    overlap); a server that refuses to stream with tools is detected anyway."""
    store: str | None = None
    """The session database; None = ``~/.toolweave/sessions.db``."""
    system: str | None = None
    """Extra system prompt appended to the coding agent's."""
    audit: Literal["off", "warn", "enforce"] = "off"
    """The declaration audit of tool calls (see `AgentConfig.audit`)."""
    concurrency: ConcurrencySettings = ConcurrencySettings()
    permissions: PermissionSettings = PermissionSettings()
    sandbox: SandboxSettings = SandboxSettings()
    bash: BashSettings = BashSettings()
    hooks: HookSettings = HookSettings()
    mcp_servers: dict[str, MCPServerSettings] = {}
    budgets: BudgetSettings = BudgetSettings()
