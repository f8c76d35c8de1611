"""Declarations of framework tools: the tools layer's `Declaration`, given by tool name.

Frameworks' tools carry no scheduling facts, so an integration is given a
`Declaration` per tool name: the same record a `Tool`, ``@tw.tool`` and a
manifest produce. A tool with no declaration gets `UNDECLARED`: SEQUENTIAL
with undeclared access, a barrier under the ``conflict`` policy (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from .._exceptions import ToolDefinitionError
from ..tools import READ_ONLY, UNDECLARED, Declaration

__all__ = [
    "HONOURED",
    "READ_ONLY",
    "UNDECLARED",
    "Declaration",
    "Declarations",
    "checked_declarations",
]

Declarations: TypeAlias = Mapping[str, Declaration]
"""Tool name → its declaration."""

HONOURED = frozenset({"concurrency", "access", "interrupt", "timeout"})
"""The fields a framework tool's declaration may set.

The framework runs the call and words its answer, so a result budget, a
hidden tool, a placement or resources, sibling aborts, replaceable output and
an access bound (read only for a sub-agent's own tools) would have no effect:
a declaration setting one is refused rather than silently ignored."""


def checked_declarations(declarations: Declarations | None) -> Declarations:
    """`declarations` (a copy), every one setting only `HONOURED` fields.

    Raises:
        ToolDefinitionError: naming the tool and the field no integration honours.
    """
    given = dict(declarations or {})
    for name, declaration in given.items():
        if not isinstance(declaration, Declaration):
            raise ToolDefinitionError(
                f"framework tool {name!r}: expected a Declaration, got {declaration!r}"
            )
        for field in _FIELDS - HONOURED:
            if getattr(declaration, field) != getattr(UNDECLARED, field):
                raise ToolDefinitionError(
                    f"framework tool {name!r}: {field}= is not honoured by the"
                    " framework integrations (the framework runs the call);"
                    f" declare only {', '.join(sorted(HONOURED))}"
                )
    return given


_FIELDS = frozenset(Declaration.__dataclass_fields__)
