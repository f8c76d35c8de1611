"""What `scheduled_tools` replaces in a tool, kept so the copy equals its original.

The Agents SDK compares tools (``tool in agent.tools``, ``==`` in its own
tests and hooks); a scheduled copy must compare equal to the tool it was made
from and give it back (`unscheduled`). What a copy replaced is kept on its
invoker, which the SDK's own per-run copies carry too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import _needs_openai_agents  # noqa: F401  first: a missing framework names its extra

# isort: split
from agents import FunctionTool
from agents.tool import _FailureHandlingFunctionToolInvoker

_UNSCHEDULED_MARKER = "__toolweave_unscheduled__"
"""Where a scheduled tool's invoker keeps what the tool had before it was scheduled."""


@dataclass(frozen=True, slots=True)
class _Unscheduled:
    """The two fields `ToolScheduler.wrap` replaces, as they were."""

    on_invoke_tool: Any
    timeout_seconds: float | None


def _unscheduled_as(tool: FunctionTool) -> _Unscheduled | None:
    invoker = tool.on_invoke_tool
    if isinstance(invoker, _FailureHandlingFunctionToolInvoker):
        invoker = invoker._invoke_tool_impl
    found = getattr(invoker, _UNSCHEDULED_MARKER, None)
    return found if isinstance(found, _Unscheduled) else None


def unscheduled(tool: FunctionTool) -> FunctionTool:
    """`tool` as it was before `scheduled_tools` (itself if it is not scheduled).

    Works on the SDK's own copies of a scheduled tool too (its per-run copies,
    ``dataclasses.replace``, namespacing): what was replaced is kept on the
    invoker, which every copy carries.
    """
    found = _unscheduled_as(tool)
    if found is None:
        return tool
    base = getattr(type(tool), "__toolweave_base__", type(tool))
    plain: FunctionTool = object.__new__(base)
    plain.__dict__.update(tool.__dict__)
    plain.on_invoke_tool = found.on_invoke_tool
    plain.timeout_seconds = found.timeout_seconds
    return plain


def _scheduled_eq(self: FunctionTool, other: object) -> object:
    """A scheduled copy equals its original (and other copies of it), as the SDK compares."""
    if not isinstance(other, FunctionTool):
        return NotImplemented
    return bool(unscheduled(self) == unscheduled(other))


_SCHEDULED_CLASSES: dict[type[FunctionTool], type[FunctionTool]] = {}


def _scheduled_class(cls: type[FunctionTool]) -> type[FunctionTool]:
    """`cls` with `_scheduled_eq`: under the same name, so reprs read as before.

    A subclass rather than the class itself: the original tool stays as it was
    (unscheduled, usable elsewhere), and ``original == copy`` holds (the
    dataclass ``__eq__`` of `cls` defers to a subclass's).
    """
    made = _SCHEDULED_CLASSES.get(cls)
    if made is None:
        namespace = {
            "__eq__": _scheduled_eq,
            "__hash__": cls.__hash__,
            "__toolweave_base__": cls,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
        }
        made = _SCHEDULED_CLASSES[cls] = type(cls.__name__, (cls,), namespace)
    return made
