"""Loading JSON and TOML manifests, and refusing invalid ones by file and field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import toolweave as tw
from toolweave.tools.manifest import (
    CommandRunner,
    EntryPointRunner,
    ManifestTool,
    load_manifest,
    load_manifests,
)

PATH_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "paths": {"type": "array"}},
    "required": ["path"],
}


def _write(folder: Path, name: str, data: Any) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _command_tool(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "file_writer",
        "description": "Write a file.",
        "executionMode": "sequential",
        "inputSchema": PATH_SCHEMA,
        "command": [sys.executable, "writer.py", "--to", "{path}"],
        "access": {"writes": ["fs:{path}"]},
    }
    spec.update(overrides)
    return spec


def test_a_json_manifest_with_one_tool(tmp_path: Path) -> None:
    [tool] = load_manifest(_write(tmp_path, "w.json", _command_tool(timeout=5)))
    assert isinstance(tool, ManifestTool)
    assert tool.name == "file_writer"
    assert tool.description == "Write a file."
    assert tool.concurrency is tw.Concurrency.SEQUENTIAL
    assert tool.interrupt is tw.Interrupt.BLOCK
    assert tool.timeout == 5
    assert tool.input_schema() == PATH_SCHEMA
    assert tool.source == tmp_path / "w.json"
    assert isinstance(tool.runner, CommandRunner)
    assert tool.runner.cwd == str(tmp_path)
    assert tool.access_for({"path": "/abs/x"}) == tw.Access(writes=["fs:/abs/x"])
    # A relative path is made absolute against the directory the command runs in.
    assert tool.access_for({"path": "sub/../y"}) == tw.Access(
        writes=[f"fs:{tmp_path}/y"]
    )


def test_a_toml_manifest_with_several_tools_and_snake_case_keys(tmp_path: Path) -> None:
    text = f"""
[[tools]]
name = "reader"
description = "Read files."
execution_mode = "parallel"
interrupt = "cancel"
command = ["{sys.executable}", "reader.py"]
cwd = "work"
ok_exit_codes = [0, 1]
[tools.input_schema]
type = "object"
required = ["path"]
[tools.input_schema.properties.path]
type = "string"
[tools.access]
reads = ["fs:{{path}}"]

[[tools]]
name = "adder"
description = "Add."
entryPoint = "manifest_probe:add"
[tools.inputSchema]
type = "object"
required = ["a"]
properties = {{ a = {{ type = "integer" }}, b = {{ type = "integer" }} }}
"""
    reader, adder = load_manifest(_write(tmp_path, "t.toml", text))
    assert reader.concurrency is tw.Concurrency.SAFE
    assert reader.interrupt is tw.Interrupt.CANCEL
    assert isinstance(reader, ManifestTool)
    assert isinstance(reader.runner, CommandRunner)
    assert reader.runner.cwd == str(tmp_path / "work")
    assert reader.runner.ok_exit_codes == (0, 1)
    assert reader.access_for({"path": "/r"}) == tw.Access(reads=["fs:/r"])
    assert adder.concurrency is tw.Concurrency.SEQUENTIAL  # the default: fail closed
    assert isinstance(adder, ManifestTool)
    assert isinstance(adder.runner, EntryPointRunner)
    assert adder.runs_in_thread  # a sync function
    assert adder.parse({"a": 2}) == {"a": 2}
    with pytest.raises(tw.ToolInputError, match="a: 'x' is not of type 'integer'"):
        adder.parse({"a": "x"})


def test_access_templates_expand_lists_and_fail_closed_on_missing_values(
    tmp_path: Path,
) -> None:
    spec = _command_tool(access={"reads": ["fs:{paths}"], "writes": ["fs:{path}"]})
    [tool] = load_manifest(_write(tmp_path, "w.json", spec))
    access = tool.access_for({"path": "/w", "paths": ["/a", "/b"]})
    assert access == tw.Access(reads=["fs:/a", "fs:/b"], writes=["fs:/w"])
    # `paths` is optional: a call without it cannot say what it reads -> barrier.
    assert tool.access_for({"path": "/w"}) == tw.Access.barrier()


def test_a_directory_of_manifests_loads_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path, "b.json", _command_tool(name="second"))
    _write(tmp_path, "a.json", {"tools": [_command_tool(name="first")]})
    _write(tmp_path, "notes.md", "not a manifest")
    assert [t.name for t in load_manifests(tmp_path)] == ["first", "second"]


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            _command_tool(executionMode="maybe"),
            "executionMode",
            "'sequential' or 'parallel'",
        ),
        (_command_tool(executionMod="parallel"), "executionMod", "Extra inputs"),
        (_command_tool(description=""), "description", "at least 1 character"),
        (_command_tool(name="has space"), "name", "should match pattern"),
        (_command_tool(timeout=0), "timeout", "greater than 0"),
        (_command_tool(entryPoint="m:f"), "(top level)", "exactly one of"),
        (
            {k: v for k, v in _command_tool().items() if k != "command"},
            "(top level)",
            "exactly one of",
        ),
        (_command_tool(command=[]), "command", "at least 1 item"),
        (_command_tool(inputSchema={"type": "string"}), "inputSchema", "type 'object'"),
        (
            _command_tool(
                inputSchema={"type": "object", "properties": {"p": {"type": 7}}}
            ),
            "inputSchema",
            "invalid input schema",
        ),
        (
            _command_tool(access={"writes": ["fs:{nope}"]}),
            "access.writes[0]",
            "{nope} is not a property of inputSchema",
        ),
        (
            _command_tool(access={"reads": ["fs:{path.__class__}"]}),
            "access.reads[0]",
            "only plain {name} placeholders",
        ),
        (_command_tool(access={"deletes": []}), "access.deletes", "Extra inputs"),
        (_command_tool(command=["{path}"]), "command[0]", "cannot be a template"),
        (_command_tool(command=["x", "{unknown}"]), "command[1]", "not a property"),
    ],
)
def test_invalid_manifests_name_the_file_and_the_field(
    tmp_path: Path, spec: dict[str, Any], field: str, message: str
) -> None:
    path = _write(tmp_path, "bad.json", {"tools": [_command_tool(name="ok"), spec]})
    with pytest.raises(tw.ConfigError) as info:
        load_manifest(path)
    text = str(info.value)
    assert str(path) in text
    where = field if field == "(top level)" else f"tools[1].{field}"
    assert where in text or (field == "(top level)" and "tools[1]" in text), text
    assert message in text


@pytest.mark.parametrize(
    ("entry_point", "message"),
    [
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
        ("manifest_probe:nothing", "has no attribute 'nothing'"),
        ("manifest_probe:PROBE.log", "is not callable"),
        ("missing.py:f", "cannot import 'missing.py'"),
    ],
)
def test_entry_points_that_do_not_resolve_are_refused(
    tmp_path: Path, entry_point: str, message: str
) -> None:
    spec = {"name": "t", "description": "d", "entryPoint": entry_point}
    with pytest.raises(tw.ConfigError, match="entryPoint") as info:
        load_manifest(_write(tmp_path, "ep.json", spec))
    assert message in str(info.value)


def test_entry_point_signatures_must_fit_the_schema(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "c": {}}}
    spec = {"name": "t", "description": "d", "entryPoint": "manifest_probe:add"}
    with pytest.raises(tw.ConfigError, match="takes no argument 'c'"):
        load_manifest(_write(tmp_path, "x.json", {**spec, "inputSchema": schema}))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    with pytest.raises(tw.ConfigError, match="needs 'a', which inputSchema does not"):
        load_manifest(_write(tmp_path, "y.json", {**spec, "inputSchema": schema}))


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("broken.json", "{not json", "(file): not valid json"),
        ("broken.toml", "name = ", "(file): not valid toml"),
        ("list.json", "[]", "expected an object"),
        ("empty.json", '{"tools": []}', "tools: expected a non-empty list"),
        (
            "mixed.json",
            '{"tools": [{}], "name": "x"}',
            "name: not allowed beside 'tools'",
        ),
        ("tool.yaml", "name: x", "must end in .json or .toml"),
    ],
)
def test_unreadable_manifests_are_refused(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    with pytest.raises(tw.ConfigError) as info:
        load_manifest(_write(tmp_path, name, content))
    assert message in str(info.value)
    assert name in str(info.value)


def test_duplicate_names_are_refused_in_a_file_and_across_files(tmp_path: Path) -> None:
    twice = {"tools": [_command_tool(), _command_tool()]}
    with pytest.raises(tw.ConfigError, match=r"tools\[1\]\.name: tool 'file_writer'"):
        load_manifest(_write(tmp_path, "twice.json", twice))
    folder = tmp_path / "dir"
    folder.mkdir()
    _write(folder, "a.json", _command_tool())
    _write(folder, "b.json", _command_tool())
    with pytest.raises(tw.ConfigError, match="declared in both"):
        load_manifests(folder)
    with pytest.raises(tw.ConfigError, match="does not exist"):
        load_manifests(tmp_path / "nowhere")
