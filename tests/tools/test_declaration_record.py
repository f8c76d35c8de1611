"""One `Declaration` record: checked in one place, and the same from every path.

A `Tool` built with a declaration or with its fields as keywords, ``@tool``,
a `WrappedTool`, a manifest entry and the framework integrations all end in
the record; for the same declaration they must produce an equal one, and a
wrong field is refused by the record itself, naming the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, get_type_hints

import pytest
from pydantic import BaseModel

from toolweave._exceptions import ToolDefinitionError
from toolweave.tools import (
    READ_ONLY,
    UNDECLARED,
    Access,
    Concurrency,
    Declaration,
    Interrupt,
    Tool,
    WrappedTool,
    tool,
)
from toolweave.tools._declaration import DeclarationFields
from toolweave.tools.manifest import load_manifest

READS = Access(reads=("db:users",))


def _classify(args: dict[str, Any]) -> bool:
    return bool(args)


class _NoInput(BaseModel):
    pass


# -- the validation table ----------------------------------------------------------

GOOD: dict[str, list[Any]] = {
    "concurrency": [Concurrency.SAFE, Concurrency.SEQUENTIAL, _classify],
    "access": [None, READS, Access(), _classify],
    "access_bound": [None, READS, Access.barrier()],
    "interrupt": [Interrupt.CANCEL, Interrupt.BLOCK],
    "timeout": [None, 0.001, 5, math.inf],
    "max_result_chars": [None, 0, 1, 10**9],
    "hidden": [True, False],
    "abort_siblings_on_error": [True, False],
    "replaceable_output": [True, False],
    "placement": ["local", "ray"],
    "resources": [{}, {"num_cpus": 0}, {"num_gpus": 0.5, "custom": 3}],
}

BAD: dict[str, list[Any]] = {
    "concurrency": ["safe", True, None, 1],
    "access": [("db:users",), "db:users", {"reads": ["x"]}],
    "access_bound": [_classify, ("x",), "x"],
    "interrupt": ["cancel", None, True],
    "timeout": [0, -1, math.nan, -math.inf, True, "5", [5]],
    "max_result_chars": [-1, 1.5, True, "many"],
    "hidden": ["yes", 1, None],
    "abort_siblings_on_error": ["no", 0, None],
    "replaceable_output": ["", 1, None],
    "placement": ["gpu-farm", "", None, "Ray"],
    "resources": [
        None,
        [("num_cpus", 1)],
        {"num_cpus": -1},
        {"num_cpus": math.inf},
        {"num_cpus": math.nan},
        {"num_cpus": True},
        {"num_cpus": "2"},
        {"": 1},
        {1: 1},
    ],
}

FIELDS = [f.name for f in dataclasses.fields(Declaration)]


def test_the_tables_cover_every_field_and_the_keywords_are_the_fields() -> None:
    assert sorted(GOOD) == sorted(BAD) == sorted(FIELDS)
    assert get_type_hints(DeclarationFields) == {
        name: hint
        for name, hint in get_type_hints(Declaration).items()
        if name in FIELDS
    }


@pytest.mark.parametrize(
    ("field", "value"), [(f, v) for f, values in GOOD.items() for v in values]
)
def test_a_good_value_is_kept(field: str, value: Any) -> None:
    declaration = Declaration(**{field: value})
    assert getattr(declaration, field) == value
    others = [f for f in FIELDS if f != field]
    assert all(getattr(declaration, f) == getattr(UNDECLARED, f) for f in others)


@pytest.mark.parametrize(
    ("field", "value"), [(f, v) for f, values in BAD.items() for v in values]
)
def test_a_bad_value_is_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ToolDefinitionError, match=rf"^{field}= must be .*, got "):
        Declaration(**{field: value})
    with pytest.raises(ToolDefinitionError, match=rf"^{field}= must be"):
        dataclasses.replace(READ_ONLY, **{field: value})  # derived: checked again
    with pytest.raises(ToolDefinitionError, match=rf"^tool 'bad': {field}= must be"):
        Tool(name="bad", description="d", input_model=_NoInput, **{field: value})

    def bad() -> None:
        """Never built."""

    if (field, value) == ("resources", None):  # @tool's documented default: none
        assert tool(resources=None)(bad).declaration == UNDECLARED
        return
    with pytest.raises(ToolDefinitionError, match=rf"^tool 'bad': {field}= must be"):
        tool(**{field: value})(bad)


def test_the_defaults_fail_closed() -> None:
    assert Declaration() == UNDECLARED
    assert (UNDECLARED.concurrency, UNDECLARED.access) == (Concurrency.SEQUENTIAL, None)
    assert UNDECLARED.interrupt is Interrupt.BLOCK
    bare = Tool(name="bare", description="d", input_model=_NoInput)
    assert bare.declaration == UNDECLARED
    assert bare.bound_access() == Access.barrier()


def test_the_record_is_frozen_its_resources_a_read_only_copy_and_unhashable() -> None:
    given = {"num_cpus": 2.0}
    declaration = Declaration(resources=given)
    given["num_cpus"] = 99.0
    assert declaration.resources == {"num_cpus": 2.0}
    with pytest.raises(TypeError):
        declaration.resources["num_cpus"] = 1.0  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        declaration.timeout = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="unhashable"):
        hash(declaration)
    with pytest.raises(TypeError):
        Declaration(Concurrency.SAFE)  # type: ignore[misc]  # keywords only


# -- every path, one record --------------------------------------------------------

FULL = Declaration(
    concurrency=Concurrency.SAFE,
    access=READS,
    access_bound=Access(reads=("db:",)),
    interrupt=Interrupt.CANCEL,
    timeout=5.0,
    max_result_chars=1_000,
    hidden=True,
    abort_siblings_on_error=True,
    replaceable_output=True,
    placement="ray",
    resources={"num_cpus": 2},
)
PARTS: dict[str, Any] = {f: getattr(FULL, f) for f in FIELDS}


async def _noop() -> str:
    """Does nothing."""
    return ""


class _Plain(Tool):
    async def call(self, args: dict[str, Any], ctx: Any) -> str:
        return ""


def _paths() -> dict[str, Tool]:
    by_record = _Plain(
        name="t", description="d", input_model=_NoInput, declaration=FULL
    )
    return {
        "Tool(declaration=)": by_record,
        "Tool(**fields)": _Plain(
            name="t", description="d", input_model=_NoInput, **PARTS
        ),
        "Tool(declaration=, **some fields)": _Plain(
            name="t",
            description="d",
            input_model=_NoInput,
            declaration=dataclasses.replace(FULL, timeout=1.0, hidden=False),
            timeout=5.0,
            hidden=True,
        ),
        "@tool(**fields)": tool(name="t", **PARTS)(_noop),
        "WrappedTool": WrappedTool(by_record),
    }


@pytest.mark.parametrize("path", list(_paths()))
def test_every_tool_path_makes_the_same_record(path: str) -> None:
    made = _paths()[path]
    assert made.declaration == FULL
    assert made.concurrency_for({}) is Concurrency.SAFE
    assert made.access_for({}) is READS
    assert (made.interrupt, made.timeout, made.max_result_chars) == (
        Interrupt.CANCEL,
        5.0,
        1_000,
    )
    assert (made.hidden, made.abort_siblings_on_error, made.replaceable_output) == (
        True,
        True,
        True,
    )
    assert (made.placement, dict(made.resources)) == ("ray", {"num_cpus": 2})
    assert made.bound_access() == Access(reads=("db:",))


def test_a_wrapped_tool_takes_overrides_as_declaration_fields() -> None:
    inner = _Plain(name="t", description="d", input_model=_NoInput, declaration=FULL)
    wrapped = WrappedTool(inner, placement="local", runs_in_thread=True)
    assert wrapped.declaration == dataclasses.replace(FULL, placement="local")
    assert wrapped.runs_in_thread and not inner.runs_in_thread


def test_the_record_says_what_the_attributes_say_after_a_change() -> None:
    made = _Plain(name="t", description="d", input_model=_NoInput, declaration=FULL)
    made.timeout = 9.0
    assert made.declaration == dataclasses.replace(FULL, timeout=9.0)
    made.max_result_chars = "many"  # type: ignore[assignment]
    with pytest.raises(ToolDefinitionError, match="max_result_chars="):
        made.declaration  # noqa: B018


def _manifest(tmp_path: Path, **entry: Any) -> Tool:
    path = tmp_path / "tools.json"
    path.write_text(
        json.dumps(
            {
                "name": "m",
                "description": "A manifest tool.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"who": {"type": "string"}},
                },
                "command": ["true"],
                **entry,
            }
        )
    )
    [made] = load_manifest(path)
    return made


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({}, UNDECLARED),
        (
            {"executionMode": "parallel", "interrupt": "cancel", "timeout": 5},
            Declaration(
                concurrency=Concurrency.SAFE, interrupt=Interrupt.CANCEL, timeout=5
            ),
        ),
        (
            {"executionMode": "sequential", "interrupt": "block", "timeout": 0.5},
            Declaration(timeout=0.5),
        ),
    ],
)
def test_a_manifest_entry_makes_the_record_a_tool_would(
    tmp_path: Path, entry: dict[str, Any], expected: Declaration
) -> None:
    made = _manifest(tmp_path, **entry)
    assert made.declaration == expected
    by_decorator = tool(
        name="m",
        concurrency=expected.concurrency,
        interrupt=expected.interrupt,
        timeout=expected.timeout,
    )(_noop)
    assert by_decorator.declaration == made.declaration


def test_a_manifest_access_template_is_the_callable_of_the_record(
    tmp_path: Path,
) -> None:
    made = _manifest(
        tmp_path,
        executionMode="parallel",
        access={"reads": ["db:{who}"], "writes": ["log:{who}"]},
    )
    declaration = made.declaration
    assert callable(declaration.access)
    assert dataclasses.replace(declaration, access=None) == Declaration(
        concurrency=Concurrency.SAFE
    )
    assert made.access_for({"who": "ann"}) == Access(
        reads=("db:ann",), writes=("log:ann",)
    )
