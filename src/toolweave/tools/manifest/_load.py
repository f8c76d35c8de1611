"""load_manifest / load_manifests: manifest files to ordinary Tool objects."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..._exceptions import ConfigError, ToolDefinitionError
from .._access import Warrant
from .._tool import Tool
from ._schema_tool import compile_input_schema
from ._spec import ToolSpec, manifest_error, read_specs
from ._template import TemplateError, fields_of
from ._tool import (
    CommandRunner,
    EntryPointRunner,
    ManifestTool,
    manifest_declaration,
)

__all__ = ["load_manifest", "load_manifests"]

_SUFFIXES = (".json", ".toml")


class _Site:
    """Where in which file a tool is declared, for error messages."""

    def __init__(self, path: Path, where: str) -> None:
        self.path = path
        self.where = where

    def error(self, field: str, message: str) -> ConfigError:
        return manifest_error(
            self.path, f"{self.where}.{field}" if self.where else field, message
        )


def _check_templates(
    site: _Site, field: str, templates: tuple[str, ...], props: set[str]
) -> None:
    for i, template in enumerate(templates):
        try:
            names = fields_of(template)
        except TemplateError as exc:
            raise site.error(f"{field}[{i}]", str(exc)) from exc
        for name in names:
            if name not in props:
                raise site.error(
                    f"{field}[{i}]", f"{{{name}}} is not a property of inputSchema"
                )


def _file_module(path: Path) -> ModuleType:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"toolweave_manifest_{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _resolve_entry_point(site: _Site, ref: str) -> Callable[..., Any]:
    module_ref, _, attr = ref.partition(":")
    try:
        if module_ref.endswith(".py"):
            module = _file_module((site.path.parent / module_ref).resolve())
        else:
            module = importlib.import_module(module_ref)
    except Exception as exc:
        raise site.error(
            "entryPoint", f"cannot import {module_ref!r}: {type(exc).__name__}: {exc}"
        ) from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise site.error("entryPoint", f"{module_ref!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise site.error("entryPoint", f"{ref!r} is not callable")
    return target  # type: ignore[no-any-return]


def _check_signature(
    site: _Site, fn: Callable[..., Any], schema: dict[str, Any]
) -> None:
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    names = {p.name for p in params}
    for prop in schema.get("properties", {}):
        if prop not in names:
            raise site.error("entryPoint", f"the function takes no argument {prop!r}")
    required = set(schema.get("required", ()))
    for p in params:
        if (
            p.default is p.empty
            and p.kind is not p.VAR_POSITIONAL
            and p.name not in required
        ):
            raise site.error(
                "entryPoint",
                f"the function needs {p.name!r}, which inputSchema does not require",
            )


def _command_runner(site: _Site, spec: ToolSpec, props: set[str]) -> CommandRunner:
    assert spec.command is not None
    _check_templates(site, "command", spec.command, props)
    program = spec.command[0]
    if fields_of(program):
        raise site.error("command[0]", "the program itself cannot be a template")
    if "/" in program and not os.path.isabs(program):
        program = str((site.path.parent / program).resolve())
    return CommandRunner(
        argv=(program, *spec.command[1:]),
        cwd=str((site.path.parent / (spec.cwd or ".")).resolve()),
        env=spec.env,
        ok_exit_codes=spec.ok_exit_codes,
        max_output_bytes=spec.max_output_bytes,
    )


def _warrant(runner: CommandRunner | EntryPointRunner, *, trusted: bool) -> Warrant:
    """Who vouches for the manifest's ``executionMode``.

    A manifest is a declaration someone wrote about a tool (often not you: a
    plugin ships one), so its ``parallel`` is taken at your word only when you
    load it as trusted. Otherwise a Python entry point runs in this process,
    where the declaration audit can enforce it (`Warrant.AUDITED`); what a
    command does is out of sight.
    """
    if trusted:
        return Warrant.USER
    if isinstance(runner, EntryPointRunner):
        return Warrant.AUDITED
    return Warrant.UNVOUCHED


def _build(site: _Site, spec: ToolSpec, *, trusted: bool) -> ManifestTool:
    try:
        compile_input_schema(spec.name, spec.input_schema)
    except ToolDefinitionError as exc:
        raise site.error("inputSchema", str(exc)) from exc
    props = set(spec.input_schema.get("properties", {}))
    runner: CommandRunner | EntryPointRunner
    if spec.command is not None:
        runner = _command_runner(site, spec, props)
        base_dir = runner.cwd
    else:
        assert spec.entry_point is not None
        function = _resolve_entry_point(site, spec.entry_point)
        _check_signature(site, function, spec.input_schema)
        runner = EntryPointRunner(
            function, abandon_on_cancel=spec.interrupt == "cancel"
        )
        base_dir = os.getcwd()
    access = None
    if spec.access is not None:
        _check_templates(site, "access.reads", spec.access.reads, props)
        _check_templates(site, "access.writes", spec.access.writes, props)
        access = (spec.access.reads, spec.access.writes)
    return ManifestTool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        runner=runner,
        declaration=manifest_declaration(spec, access, base_dir),
        source=site.path,
        aliases=spec.aliases,
        warrant=_warrant(runner, trusted=trusted),
    )


def load_manifest(path: str | os.PathLike[str], *, trusted: bool = False) -> list[Tool]:
    """Load the tools a JSON or TOML manifest declares.

    Relative paths in the manifest (a ``command`` program such as ``./run.sh``,
    ``cwd``, an ``entryPoint`` file such as ``tools.py:main``) are relative to the
    manifest's directory; a command runs there unless ``cwd`` says otherwise.

    ``executionMode: "parallel"`` makes a tool SAFE either way. `trusted` says
    you vouch for the manifest (you wrote it, or checked it): its parallel
    tools may then also start while the model's response still streams.
    Untrusted (the default), they start only once the response is final,
    except an ``entryPoint`` tool under ``audit="enforce"`` (`Tool.warrant`).

    Raises:
        ConfigError: the file cannot be read or parsed, or a field is invalid;
            the message names the file and the field (``tools[1].executionMode``).
    """
    file = Path(path).resolve()
    tools: list[Tool] = []
    seen: set[str] = set()
    for where, spec in read_specs(file):
        site = _Site(file, where)
        if spec.name in seen:
            raise site.error("name", f"tool {spec.name!r} is declared twice")
        seen.add(spec.name)
        tools.append(_build(site, spec, trusted=trusted))
    return tools


def load_manifests(
    directory: str | os.PathLike[str], *, trusted: bool = False
) -> list[Tool]:
    """Load every ``*.json`` and ``*.toml`` manifest in `directory` (not recursive).

    Files are read in name order, and tools keep that order. `trusted` is
    `load_manifest`'s, for every file.

    Raises:
        ConfigError: `directory` is not a directory, a manifest is invalid, or two
            files declare the same tool name.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(f"tool manifest directory {folder} does not exist")
    tools: list[Tool] = []
    origin: dict[str, Path] = {}
    for file in sorted(
        p for p in folder.iterdir() if p.suffix in _SUFFIXES and p.is_file()
    ):
        for tool in load_manifest(file, trusted=trusted):
            if tool.name in origin:
                raise ConfigError(
                    f"tool {tool.name!r} is declared in both {origin[tool.name]} and {file}"
                )
            origin[tool.name] = file
            tools.append(tool)
    return tools
