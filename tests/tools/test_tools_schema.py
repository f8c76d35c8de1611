"""`Tool.input_schema`: built once per input model, a fresh copy for every caller."""

from __future__ import annotations

from typing import Literal

from toolweave.tools import tool


@tool
def pick(kind: Literal["a", "b"], tags: list[str], limit: int = 3) -> str:
    """Pick something."""
    return kind


@tool
def other(kind: int) -> str:
    """Another tool with a same-named parameter."""
    return str(kind)


def test_the_schema_has_no_title_and_the_declared_properties() -> None:
    schema = pick.input_schema()
    assert "title" not in schema
    assert set(schema["properties"]) == {"kind", "tags", "limit"}
    assert schema["properties"]["kind"]["enum"] == ["a", "b"]
    assert schema["required"] == ["kind", "tags"]


def test_changing_a_returned_schema_changes_no_later_one() -> None:
    first = pick.input_schema()
    first["properties"]["kind"]["enum"].append("c")
    first["properties"]["tags"]["items"]["type"] = "integer"
    first["required"].clear()
    first["extra"] = True
    second = pick.input_schema()
    assert second["properties"]["kind"]["enum"] == ["a", "b"]
    assert second["properties"]["tags"]["items"]["type"] == "string"
    assert second["required"] == ["kind", "tags"]
    assert "extra" not in second
    fresh = pick.input_model.model_json_schema()
    del fresh["title"]
    assert second == fresh


def test_each_tool_gets_the_schema_of_its_own_model() -> None:
    assert other.input_schema()["properties"]["kind"]["type"] == "integer"
    assert pick.input_schema()["properties"]["kind"]["enum"] == ["a", "b"]
