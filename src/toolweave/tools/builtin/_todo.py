"""The `todo_write` and `todo_read` tools: the session's task list."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..._exceptions import ToolInputError
from .._access import Access, Concurrency, Interrupt, Warrant
from .._context import SessionState, ToolContext
from .._tool import Tool

__all__ = ["TodoItem", "TodoReadTool", "TodoWriteTool", "read_todos"]

TODO_KEY = "todo:"
"""The access key of the task list, and its key in `SessionState.values`."""

Status = Literal["pending", "in_progress", "completed"]
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


@dataclass(frozen=True, slots=True)
class TodoItem:
    """One task in the list."""

    content: str
    """What is to be done."""
    status: Status
    """pending, in_progress or completed."""


class TodoEntry(BaseModel):
    """One task as the model writes it."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="The task, in imperative form.")
    status: Status = Field("pending", description="pending, in_progress or completed.")


class TodoWriteInput(BaseModel):
    """Input of `todo_write`."""

    model_config = ConfigDict(extra="forbid")

    todos: list[TodoEntry] = Field(
        max_length=200, description="The whole updated list; it replaces the old one."
    )


class TodoReadInput(BaseModel):
    """Input of `todo_read` (none)."""

    model_config = ConfigDict(extra="forbid")


def read_todos(state: SessionState) -> tuple[TodoItem, ...]:
    """The session's task list (empty if never written)."""
    with state.lock:
        todos: tuple[TodoItem, ...] = state.values.get(TODO_KEY, ())
    return todos


def _render(todos: tuple[TodoItem, ...]) -> str:
    if not todos:
        return "The task list is empty."
    done = sum(t.status == "completed" for t in todos)
    lines = [f"{i}. {_MARK[t.status]} {t.content}" for i, t in enumerate(todos, 1)]
    return f"Tasks ({done}/{len(todos)} completed):\n" + "\n".join(lines)


class TodoWriteTool(Tool):
    """Replace the session's task list.

    SEQUENTIAL (it mutates shared state); access: writes ``todo:``,
    so under the `conflict` policy it only waits for todo reads and writes.
    The list lives in `SessionState.values` and is replaced under
    `SessionState.lock`. Interrupt: BLOCK (instant).
    """

    def __init__(self) -> None:
        super().__init__(
            name="todo_write",
            description=(
                "Replace your task list with the given items (content and status: "
                "pending, in_progress or completed). Keep at most one task "
                "in_progress. Send the whole list each time."
            ),
            input_model=TodoWriteInput,
            concurrency=Concurrency.SEQUENTIAL,
            access=lambda args: Access(writes=(TODO_KEY,)),
            access_bound=Access(writes=(TODO_KEY,)),
            interrupt=Interrupt.BLOCK,
        )

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Store the list; returns it rendered."""
        entries: list[TodoEntry] = args["todos"]
        todos = tuple(TodoItem(e.content, e.status) for e in entries)
        active = sum(t.status == "in_progress" for t in todos)
        if active > 1:
            raise ToolInputError(
                f"{active} tasks are in_progress; keep at most one in_progress"
            )
        with ctx.state.lock:
            ctx.state.values[TODO_KEY] = todos
        return "Task list updated.\n" + _render(todos)


class TodoReadTool(Tool):
    """Show the session's task list.

    SAFE; access: reads ``todo:``. Interrupt: BLOCK (instant).
    """

    def __init__(self) -> None:
        super().__init__(
            name="todo_read",
            description="Show your current task list with each task's status.",
            input_model=TodoReadInput,
            concurrency=Concurrency.SAFE,
            access=lambda args: Access(reads=(TODO_KEY,)),
            access_bound=Access(reads=(TODO_KEY,)),
            interrupt=Interrupt.BLOCK,
            warrant=Warrant.ENFORCED,  # its own code only reads the list
        )

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Return the list rendered."""
        del args
        return _render(read_todos(ctx.state))
