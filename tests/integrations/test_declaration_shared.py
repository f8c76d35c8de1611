"""The integrations take the tools layer's `Declaration`, and schedule by exactly it.

Each adapter hands its declarations to the `ForeignScheduler`, whose stand-in
tool must carry the same record a `Tool` or ``@tool`` would for the same
declaration (its result budget off: the framework words the answer). A field
the framework path cannot honour is refused, naming the tool and the field,
instead of being dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from extras import require_extra
from toolweave import integrations
from toolweave._exceptions import ToolDefinitionError
from toolweave.integrations._declaration import HONOURED, checked_declarations
from toolweave.integrations._foreign import ForeignScheduler
from toolweave.tools import (
    Access,
    Concurrency,
    Declaration,
    Interrupt,
    Tool,
    tool,
)

DECLARED = Declaration(
    concurrency=Concurrency.SAFE,
    access=Access(reads=("db",)),
    interrupt=Interrupt.CANCEL,
    timeout=2.5,
)


def _foreign(declarations: dict[str, Declaration]) -> ForeignScheduler:
    return ForeignScheduler(checked_declarations(declarations))


def _langgraph(declarations: dict[str, Declaration]) -> ForeignScheduler:
    require_extra("langgraph")
    from toolweave.integrations.langgraph import ScheduledToolNode

    node = ScheduledToolNode([], declarations=declarations)
    return node._scheduler  # the scheduler the node runs every call through


def _pydantic_ai(declarations: dict[str, Declaration]) -> ForeignScheduler:
    require_extra("pydantic-ai")
    from pydantic_ai.toolsets import FunctionToolset

    from toolweave.integrations.pydantic_ai import ScheduledToolset

    toolset = ScheduledToolset(FunctionToolset(), declarations=declarations)
    return toolset._scheduler


def _openai_agents(declarations: dict[str, Declaration]) -> ForeignScheduler:
    require_extra("openai-agents")
    from toolweave.integrations.openai_agents import ToolScheduler

    return ToolScheduler(declarations)._scheduler


ADAPTERS: dict[str, Callable[[dict[str, Declaration]], ForeignScheduler]] = {
    "foreign": _foreign,
    "langgraph": _langgraph,
    "pydantic_ai": _pydantic_ai,
    "openai_agents": _openai_agents,
}


def _stand_in(scheduler: ForeignScheduler, name: str) -> Tool:
    found = scheduler.registry_for((name,)).get(name)
    assert found is not None
    return found


def test_the_integrations_export_the_tools_record() -> None:
    from toolweave import tools

    assert integrations.Declaration is tools.Declaration
    assert integrations.UNDECLARED is tools.UNDECLARED
    assert integrations.READ_ONLY is tools.READ_ONLY


@pytest.mark.parametrize("adapter", list(ADAPTERS))
@pytest.mark.parametrize(
    "declaration",
    [
        DECLARED,
        integrations.READ_ONLY,
        integrations.UNDECLARED,
        Declaration(concurrency=lambda args: True, access=lambda args: Access()),
    ],
    ids=["declared", "read-only", "undeclared", "callables"],
)
def test_each_adapter_schedules_by_the_record_a_tool_would_carry(
    adapter: str, declaration: Declaration
) -> None:
    scheduler = ADAPTERS[adapter]({"t": declaration})
    expected = dataclasses.replace(declaration, max_result_chars=None)
    assert _stand_in(scheduler, "t").declaration == expected
    fields = {f: getattr(expected, f) for f in HONOURED}
    assert (
        tool(name="t", max_result_chars=None, **fields)(_noop).declaration == expected
    )
    assert scheduler.declaration("t") is declaration
    assert scheduler.declaration("undeclared") == integrations.UNDECLARED


async def _noop() -> None:
    """Nothing."""


UNHONOURED: dict[str, Any] = {
    "access_bound": Access(),
    "max_result_chars": 10,
    "hidden": True,
    "abort_siblings_on_error": True,
    "replaceable_output": True,
    "placement": "ray",
    "resources": {"num_cpus": 1},
}


def test_the_unhonoured_table_is_every_other_field() -> None:
    fields = {f.name for f in dataclasses.fields(Declaration)}
    assert set(UNHONOURED) == fields - HONOURED


@pytest.mark.parametrize("adapter", list(ADAPTERS))
@pytest.mark.parametrize(("field", "value"), list(UNHONOURED.items()))
def test_each_adapter_refuses_a_field_it_cannot_honour(
    adapter: str, field: str, value: Any
) -> None:
    declaration = dataclasses.replace(DECLARED, **{field: value})
    with pytest.raises(
        ToolDefinitionError, match=rf"^framework tool 'w': {field}= is not honoured"
    ):
        ADAPTERS[adapter]({"r": DECLARED, "w": declaration})


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_each_adapter_refuses_what_is_not_a_declaration(adapter: str) -> None:
    given: dict[str, Any] = {"w": {"concurrency": Concurrency.SAFE}}
    with pytest.raises(ToolDefinitionError, match="'w': expected a Declaration"):
        ADAPTERS[adapter](given)
