"""ToolRegistry: the session's tools, looked up by name or alias."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeAlias

from .._exceptions import ToolDefinitionError
from ._function import tool as _tool
from ._tool import Tool

ToolLike: TypeAlias = Tool | Callable[..., Any]
"""A Tool, or a plain function (made a tool by `@tool` with its defaults)."""


def as_tool(item: object) -> Tool:
    """`item` as a Tool: a Tool as it is, a plain function through `@tool`.

    Raises:
        ToolDefinitionError: for anything else, or a function `@tool` refuses.
    """
    if isinstance(item, Tool):
        return item
    if callable(item):
        return _tool(item)
    raise ToolDefinitionError(
        f"tools= holds {item!r}, which is neither a Tool nor a function"
    )


__all__ = ["ToolLike", "ToolRegistry", "as_tool"]


class ToolRegistry:
    """The tools of one session, by name and alias.

    Mutated during a batch only by a context modifier, which the scheduler
    applies on the loop between calls (`generation` counts the changes), so
    the gate and the workers may read it without a lock. Registering a name or
    alias twice is an error. A plain function among `tools` is wrapped by
    `@tool` with its defaults (SEQUENTIAL, undeclared access).
    """

    def __init__(self, tools: Iterable[ToolLike] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._names: dict[str, Tool] = {}
        self._warming = 0
        self._generation = 0
        for t in tools:
            self.register(as_tool(t))

    def register(self, tool: Tool) -> None:
        """Add `tool`. Raises ToolDefinitionError if a name or alias is taken."""
        for key in (tool.name, *tool.aliases):
            if key in self._names:
                raise ToolDefinitionError(f"tool name {key!r} is registered twice")
        self._tools[tool.name] = tool
        for key in (tool.name, *tool.aliases):
            self._names[key] = tool
        self._warming += tool.needs_warming
        self._generation += 1

    def unregister(self, name: str) -> None:
        """Remove the tool called `name` (and its aliases); no error if absent."""
        tool = self._tools.pop(name, None)
        if tool is not None:
            for key in (tool.name, *tool.aliases):
                self._names.pop(key, None)
            self._warming -= tool.needs_warming
            self._generation += 1

    @property
    def generation(self) -> int:
        """A count of the changes to the toolset: a name registered or removed.

        The scheduler compares it before and after a context modifier: a change
        means the calls after that one must be classified again (what a name
        resolves to, and so what the call may overlap, may have changed).
        """
        return self._generation

    def get(self, name: str) -> Tool | None:
        """The tool with this name or alias, or None."""
        return self._names.get(name)

    @property
    def needs_warming(self) -> bool:
        """True if some tool here has declaration work to warm (`Tool.needs_warming`).

        Lets the scheduler skip looking up each call's tool for the warm-up
        when no tool has any.
        """
        return self._warming > 0

    def closest(self, name: str, n: int = 3) -> list[str]:
        """Up to `n` registered names that look like `name` (for "did you mean")."""
        return difflib.get_close_matches(name, list(self._names), n=n, cutoff=0.5)

    @property
    def names(self) -> list[str]:
        """Primary names of the registered tools, in registration order."""
        return list(self._tools)

    def visible(self) -> list[Tool]:
        """The tools offered to the model (not hidden)."""
        return [t for t in self._tools.values() if not t.hidden]

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._names
