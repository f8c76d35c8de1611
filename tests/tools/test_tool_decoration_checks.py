"""`@tw.tool` refuses at decoration time what a provider would refuse mid-run."""

from __future__ import annotations

import datetime
import enum
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

import toolweave as tw
from toolweave._exceptions import ToolDefinitionError
from toolweave.models import ScriptedModel


@pytest.mark.parametrize(
    "name",
    ["a", "read_file", "get-weather", "X9", "a" * 64, "mcp__git__log"],
)
def test_names_providers_accept(name: str) -> None:
    @tw.tool(name=name)
    def anything() -> str:
        """The anything test tool."""
        return ""

    assert anything.name == name


@pytest.mark.parametrize(
    "name",
    ["", "a" * 65, "read file", "read.file", "wörk", "a/b", "tool()", "a\n"],
)
def test_names_providers_refuse(name: str) -> None:
    def anything() -> str:
        """The anything test tool."""
        return ""

    with pytest.raises(ToolDefinitionError, match="not accepted by model providers"):
        tw.tool(name=name)(anything) if name else tw.tool(name=None)(_nameless())


def _nameless() -> Any:
    def fn() -> str:
        return ""

    fn.__name__ = ""
    return fn


def test_an_alias_is_a_name_too() -> None:
    with pytest.raises(ToolDefinitionError, match="'old name'"):

        @tw.tool(aliases=("old name",))
        def fine() -> str:
            """The fine test tool."""
            return ""


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(ToolDefinitionError, match=r"pass @tool\(name=\.\.\.\)"):
        tw.tool(lambda x: x)
    named = tw.tool(name="noon", description="The time at noon.")(lambda: "12:00")
    assert named.name == "noon"


class Colour(enum.Enum):
    RED = "red"


@dataclass
class Point:
    x: int
    y: int


class Query(BaseModel):
    text: str


def test_json_friendly_types_are_accepted() -> None:
    @tw.tool
    def rich(
        a: str,
        b: int,
        c: float,
        d: bool,
        e: list[str],
        f: dict[str, int],
        g: Literal["x", "y"],
        h: Colour,
        i: Point,
        j: Query,
        k: datetime.date,
        m: Path,
        n: int | None = None,
    ) -> str:
        """The rich test tool."""
        return ""

    props = rich.input_schema()["properties"]
    assert set(props) == set("abcdefghijkmn")


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (threading.Event, "Event"),
        (type("Opaque", (), {}), "Opaque"),
        (list[type("Blob", (), {})], "Blob"),  # type: ignore[misc]
    ],
)
def test_a_type_without_a_json_schema_names_the_tool_and_the_parameter(
    annotation: Any, shown: str
) -> None:
    def lookup(key: str, handle: Any, limit: int = 3) -> str:
        """The lookup test tool."""
        return ""

    lookup.__annotations__["handle"] = annotation
    with pytest.raises(ToolDefinitionError) as caught:
        tw.tool(lookup)
    text = str(caught.value)
    assert "tool 'lookup'" in text and "parameter 'handle'" in text, text
    assert shown in text and "no JSON schema" in text
    assert "'key'" not in text and "'limit'" not in text


def test_the_context_parameter_needs_no_schema() -> None:
    @tw.tool
    def with_context(path: str, ctx: tw.ToolContext) -> str:
        """The with_context test tool."""
        return path

    assert set(with_context.input_schema()["properties"]) == {"path"}


def _weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: Where.
    """
    return f"sunny in {city}"


def test_tools_accepts_a_plain_function_wrapped_with_the_defaults() -> None:
    model = ScriptedModel(
        [
            tw.ModelResponse(
                [tw.ToolCall("c1", "_weather", {"city": "Oslo"})],
                stop_reason=tw.StopReason.TOOL_USE,
            ),
            tw.ModelResponse([tw.Text("done")]),
        ]
    )
    agent = tw.Agent(model, [_weather])
    wrapped = agent.registry.get("_weather")
    assert wrapped is not None
    assert wrapped.concurrency is tw.Concurrency.SEQUENTIAL and wrapped.access is None
    assert wrapped.input_schema()["properties"]["city"]["description"] == "Where."
    result = agent.run_sync("weather?")
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    (tool_result,) = [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]
    assert tool_result.content == "sunny in Oslo" and not tool_result.is_error


def test_tools_refuses_what_is_neither_a_tool_nor_a_function() -> None:
    with pytest.raises(ToolDefinitionError, match="neither a Tool nor a function"):
        tw.ToolRegistry([42])  # type: ignore[list-item]
    with pytest.raises(ToolDefinitionError, match="pass @tool"):
        tw.Agent(ScriptedModel([]), [lambda: "x"])
