"""Shell hooks as settings: the ``[[hooks.*]]`` tables of `toolweave.toml`, and finding them.

The same files the `toolweave` command reads: the user's
``$TOOLWEAVE_HOME/config.toml`` (``~/.toolweave``), then the project's
`toolweave.toml`, the nearest from the working directory upwards (not above
the git root). Hooks accumulate: a project adds hooks to the user's, never
removes one. `load_hook_settings` is how a library user's agent, and every
session of ``toolweave batch``, honours the hooks ``toolweave run`` honours.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._exceptions import ConfigError

__all__ = [
    "PROJECT_FILE",
    "HookCommand",
    "HookSettings",
    "find_project_config",
    "load_hook_settings",
    "read_toml",
    "settings_files",
    "toolweave_home",
    "user_config_path",
]

PROJECT_FILE = "toolweave.toml"
"""The project settings file, looked up from the working directory upwards."""

_STRICT = ConfigDict(extra="forbid", frozen=True)


class HookCommand(BaseModel):
    """One shell hook: the command gets the hook's input as JSON on stdin."""

    model_config = _STRICT

    command: str = Field(min_length=1)
    matcher: str = "*"
    timeout: float = Field(default=60.0, gt=0)


class HookSettings(BaseModel):
    """``[[hooks.PreToolUse]]`` and friends, as in Claude Code's settings."""

    model_config = _STRICT

    PreToolUse: tuple[HookCommand, ...] = ()
    PostToolUse: tuple[HookCommand, ...] = ()
    PostToolUseFailure: tuple[HookCommand, ...] = ()
    Stop: tuple[HookCommand, ...] = ()
    RunStart: tuple[HookCommand, ...] = ()
    """Run once when a run starts (Claude Code's SessionStart); the matcher is unused."""

    def __add__(self, later: HookSettings) -> HookSettings:
        """These hooks, then `later`'s (how settings layers accumulate)."""
        return HookSettings(
            **{
                name: getattr(self, name) + getattr(later, name)
                for name in HookSettings.model_fields
            }
        )


def toolweave_home() -> Path:
    """``$TOOLWEAVE_HOME``, else ``~/.toolweave`` (settings and the default store)."""
    return Path(os.environ.get("TOOLWEAVE_HOME") or "~/.toolweave").expanduser()


def user_config_path() -> Path:
    """The user's settings file."""
    return toolweave_home() / "config.toml"


def find_project_config(start: Path) -> Path | None:
    """The nearest `toolweave.toml` from `start` upwards, not above the git root."""
    for directory in (start, *start.parents):
        candidate = directory / PROJECT_FILE
        if candidate.is_file():
            return candidate
        if (directory / ".git").exists():
            return None
    return None


def settings_files(cwd: Path) -> tuple[Path, ...]:
    """The settings files that apply in `cwd`, in the order they are layered."""
    found = (user_config_path(), find_project_config(cwd))
    return tuple(path for path in found if path is not None and path.is_file())


def read_toml(path: Path) -> dict[str, Any]:
    """Parse one settings file.

    Raises:
        ConfigError: if it cannot be read or is not valid TOML.
    """
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc


def load_hook_settings(cwd: Path) -> HookSettings:
    """The shell hooks configured for `cwd`: the user's, then the project's.

    Only the ``hooks`` table is read (the other settings are the command's);
    it is validated as ``toolweave run`` validates it.

    Raises:
        ConfigError: naming the file and key of the first invalid value.
    """
    hooks = HookSettings()
    for path in settings_files(cwd):
        table = read_toml(path).get("hooks", {})
        try:
            hooks += HookSettings.model_validate(table)
        except ValidationError as exc:
            problems = "; ".join(
                f"hooks.{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
                for error in exc.errors()
            )
            raise ConfigError(f"{path}: {problems}") from exc
    return hooks
