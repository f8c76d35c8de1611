"""Reading a JSON or TOML tool manifest into validated tool specs."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from ..._exceptions import ConfigError

__all__ = ["AccessTemplate", "ToolSpec", "manifest_error", "read_specs"]

_SPEC_CONFIG = ConfigDict(
    extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
)


class AccessTemplate(BaseModel):
    """The ``access`` block: key templates filled from the validated input."""

    model_config = _SPEC_CONFIG

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


class ToolSpec(BaseModel):
    """One tool as a manifest declares it (camelCase keys; snake_case accepted)."""

    model_config = _SPEC_CONFIG

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = Field(min_length=1)
    input_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    command: tuple[str, ...] | None = Field(default=None, min_length=1)
    entry_point: str | None = Field(default=None, pattern=r"^[^:]+:[A-Za-z_][\w.]*$")
    execution_mode: Literal["sequential", "parallel"] = "sequential"
    access: AccessTemplate | None = None
    interrupt: Literal["cancel", "block"] = "block"
    timeout: float | None = Field(default=None, gt=0)
    ok_exit_codes: tuple[int, ...] = (0,)
    cwd: str | None = None
    env: dict[str, str] | None = None
    max_output_bytes: int = Field(default=1_000_000, gt=0)
    aliases: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _one_runner(self) -> ToolSpec:
        if (self.command is None) == (self.entry_point is None):
            raise ValueError("give exactly one of 'command' and 'entryPoint'")
        if self.entry_point is not None and (self.cwd or self.env):
            raise ValueError("'cwd' and 'env' apply to 'command' tools only")
        return self


def manifest_error(path: Path, where: str, message: str) -> ConfigError:
    """A ConfigError naming the manifest file and the field at fault."""
    return ConfigError(f"invalid tool manifest {path}: {where}: {message}")


def _loc(prefix: str, loc: Sequence[int | str]) -> str:
    text = prefix
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


def _parse_file(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read tool manifest {path}: {exc}") from exc
    try:
        if path.suffix == ".toml":
            return tomllib.loads(raw.decode("utf-8"))
        if path.suffix == ".json":
            return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise manifest_error(
            path, "(file)", f"not valid {path.suffix[1:]}: {exc}"
        ) from exc
    raise ConfigError(f"tool manifest {path} must end in .json or .toml")


def _entries(path: Path, data: Any) -> list[tuple[str, Any]]:
    if not isinstance(data, dict):
        raise manifest_error(
            path, "(top level)", "expected an object (a tool, or 'tools')"
        )
    if "tools" not in data:
        return [("", data)]
    if set(data) != {"tools"}:
        stray = sorted(set(data) - {"tools"})
        raise manifest_error(path, stray[0], "not allowed beside 'tools'")
    tools = data["tools"]
    if not isinstance(tools, list) or not tools:
        raise manifest_error(path, "tools", "expected a non-empty list of tools")
    return [(f"tools[{i}]", entry) for i, entry in enumerate(tools)]


def read_specs(path: Path) -> list[tuple[str, ToolSpec]]:
    """Parse `path` into ``(where, spec)`` pairs; `where` locates each tool in the file.

    A file holds one tool (its keys at the top level) or ``tools``: a list of them
    (``[[tools]]`` in TOML).

    Raises:
        ConfigError: naming the file and every field at fault.
    """
    specs: list[tuple[str, ToolSpec]] = []
    for where, entry in _entries(path, _parse_file(path)):
        try:
            specs.append((where, ToolSpec.model_validate(entry)))
        except ValidationError as exc:
            problems = [
                f"{_loc(where, err['loc'])}: {err['msg']}"
                for err in exc.errors(include_url=False)
            ]
            raise ConfigError(
                f"invalid tool manifest {path}: {'; '.join(problems)}"
            ) from exc
    return specs
