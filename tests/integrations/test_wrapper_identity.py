"""What the wrappers look like to code that compares tools (issue 30, item 4).

`scheduled_tools` returns copies: each compares equal to its original (and the
original to it), also after the SDK's own copies (``dataclasses.replace``), and
`unscheduled` gives back the tool as it was; scheduling a scheduled tool again
schedules its original once, not twice. `ScheduledToolset` keeps the wrapped
toolset's name-clash hint.
"""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("agents")
pytest.importorskip("pydantic_ai")

from agents import FunctionTool, function_tool
from pydantic_ai.toolsets import FunctionToolset, PrefixedToolset

from toolweave.integrations.openai_agents import scheduled_tools, unscheduled
from toolweave.integrations.pydantic_ai import ScheduledToolset


def _tools() -> list[FunctionTool]:
    @function_tool
    def one(x: int) -> int:
        """One."""
        return x

    @function_tool
    def two(x: int) -> int:
        """Two."""
        return x

    return [one, two]


def test_scheduled_copies_compare_equal_to_their_originals() -> None:
    originals = _tools()
    scheduled = scheduled_tools(originals)
    assert scheduled == originals
    assert originals == scheduled
    assert [s is o for s, o in zip(scheduled, originals, strict=True)] == [False] * 2
    assert scheduled[0] != originals[1]
    assert originals[0] in scheduled
    assert scheduled.index(originals[1]) == 1


def test_an_sdk_copy_of_a_scheduled_tool_still_compares_equal() -> None:
    [original, _] = _tools()
    [scheduled] = scheduled_tools([original])
    copy = dataclasses.replace(scheduled)
    assert copy == original
    assert copy == scheduled


def test_unscheduled_gives_back_the_tool_as_it_was() -> None:
    [original, other] = _tools()
    [scheduled, _] = scheduled_tools([original, other])
    plain = unscheduled(scheduled)
    assert type(plain) is type(original)
    assert plain.on_invoke_tool is original.on_invoke_tool
    assert plain == original
    assert unscheduled(original) is original


def test_scheduling_twice_schedules_the_original_once() -> None:
    [original, other] = _tools()
    once = scheduled_tools([original, other])
    twice = scheduled_tools(once)
    inner = unscheduled(twice[0])
    assert inner.on_invoke_tool is original.on_invoke_tool
    assert twice == [original, other]


def test_scheduled_toolset_forwards_the_name_clash_hint() -> None:
    prefixed = PrefixedToolset(FunctionToolset(), prefix="p")
    assert "prefix" in prefixed.tool_name_conflict_hint
    assert (
        ScheduledToolset(prefixed).tool_name_conflict_hint
        == prefixed.tool_name_conflict_hint
    )
    plain = FunctionToolset()
    assert (
        ScheduledToolset(plain).tool_name_conflict_hint == plain.tool_name_conflict_hint
    )
