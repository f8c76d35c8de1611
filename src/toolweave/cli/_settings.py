"""Loading settings: defaults, the user file, the project file, the environment, flags.

Later layers win for single values. Permission rules and hooks accumulate (a
project may add a deny rule, never remove the user's); an MCP server defined in
a later layer replaces the earlier definition of the same name. Every value
remembers which layer set it, for `toolweave config`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._exceptions import ConfigError
from ..loop import (
    PROJECT_FILE,
    find_project_config,
    read_toml,
    settings_files,
    toolweave_home,
    user_config_path,
)
from ._settings_model import Settings

__all__ = [
    "PROJECT_FILE",
    "LoadedSettings",
    "find_project_config",
    "flatten",
    "load_settings",
    "read_toml",
    "toolweave_home",
    "user_config_path",
]

_ACCUMULATE = frozenset(
    {
        ("permissions", "allow"),
        ("permissions", "ask"),
        ("permissions", "deny"),
        ("hooks", "PreToolUse"),
        ("hooks", "PostToolUse"),
        ("hooks", "PostToolUseFailure"),
        ("hooks", "Stop"),
        ("hooks", "RunStart"),
    }
)


def _validate(data: Mapping[str, Any], source: str) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '(top level)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"{source}: {problems}") from exc


def _record(sources: dict[str, str], dotted: str, value: object, source: str) -> None:
    for key, _ in flatten(value, dotted):
        sources[key] = source


def _merge(
    into: dict[str, Any],
    layer: Mapping[str, Any],
    source: str,
    sources: dict[str, str],
    path: tuple[str, ...] = (),
) -> None:
    for key, value in layer.items():
        here = (*path, key)
        dotted = ".".join(here)
        if here in _ACCUMULATE:
            start = len(into.get(key, ()))
            into[key] = [*into.get(key, ()), *value]
            for offset, item in enumerate(value):
                _record(sources, f"{dotted}[{start + offset}]", item, source)
        elif isinstance(value, Mapping) and path != ("mcp_servers",):
            _merge(into.setdefault(key, {}), value, source, sources, here)
        else:
            into[key] = value
            _record(sources, dotted, value, source)


def flatten(value: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    """``(dotted key, leaf value)`` pairs of nested mappings and lists."""
    if isinstance(value, Mapping) and value:
        for key, item in value.items():
            yield from flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list | tuple) and value:
        for index, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


@dataclass(frozen=True, slots=True)
class LoadedSettings:
    """The effective settings and where each value came from."""

    settings: Settings
    """The merged, validated settings."""
    sources: Mapping[str, str]
    """Dotted key (``concurrency.policy``, ``permissions.deny[0]``) → its source."""
    files: tuple[Path, ...]
    """The settings files that were read, in order."""

    def source_of(self, key: str) -> str:
        """Where `key` was set (a parent table's source counts), else ``default``."""
        probe = key
        while probe:
            if probe in self.sources:
                return self.sources[probe]
            probe = probe.rpartition(".")[0]
        return "default"


def load_settings(
    cwd: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> LoadedSettings:
    """Read the user file, the project file, ``$TOOLWEAVE_MODEL`` and `overrides`.

    `overrides` are command-line values, in the same nested shape as the files
    (None values are ignored).

    Raises:
        ConfigError: naming the file and key of the first invalid value.
    """
    environ = os.environ if environ is None else environ
    layers: list[tuple[str, Mapping[str, Any]]] = []
    files: list[Path] = []
    for path in settings_files(cwd):
        data = read_toml(path)
        _validate(data, str(path))
        layers.append((str(path), data))
        files.append(path)
    if environ.get("TOOLWEAVE_MODEL"):
        layers.append(("env TOOLWEAVE_MODEL", {"model": environ["TOOLWEAVE_MODEL"]}))
    flags = _drop_none(overrides or {})
    if flags:
        _validate(flags, "command line")
        layers.append(("command line", flags))
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for source, layer in layers:
        _merge(merged, layer, source, sources)
    settings = _validate(merged, "effective settings")
    return LoadedSettings(settings, sources, tuple(files))


def _drop_none(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            nested = _drop_none(value)
            if nested:
                out[key] = nested
        elif value is not None:
            out[key] = value
    return out
