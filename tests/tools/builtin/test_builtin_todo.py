from __future__ import annotations

from pathlib import Path

import pytest
from builtin_support import run

from toolweave._exceptions import ToolInputError
from toolweave.tools import Access, Concurrency, Interrupt, SessionState
from toolweave.tools.builtin import TodoItem, TodoReadTool, TodoWriteTool

pytestmark = pytest.mark.anyio


async def test_write_then_read(state: SessionState) -> None:
    assert await run(TodoReadTool(), {}, state) == "The task list is empty."
    todos = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"},
        {"content": "Run the tests"},
    ]
    out = await run(TodoWriteTool(), {"todos": todos}, state)
    listing = (
        "Tasks (1/3 completed):\n1. [x] Read the code\n2. [~] Fix the bug\n"
        "3. [ ] Run the tests"
    )
    assert out == "Task list updated.\n" + listing
    assert await run(TodoReadTool(), {}, state) == listing
    assert state.values["todo:"] == (
        TodoItem("Read the code", "completed"),
        TodoItem("Fix the bug", "in_progress"),
        TodoItem("Run the tests", "pending"),
    )
    await run(TodoWriteTool(), {"todos": []}, state)
    assert await run(TodoReadTool(), {}, state) == "The task list is empty."


async def test_bad_input(state: SessionState) -> None:
    two_active = [
        {"content": "a", "status": "in_progress"},
        {"content": "b", "status": "in_progress"},
    ]
    with pytest.raises(ToolInputError, match="2 tasks are in_progress"):
        await run(TodoWriteTool(), {"todos": two_active}, state)
    assert "todo:" not in state.values
    for raw in (
        {},
        {"todos": [{"content": ""}]},
        {"todos": [{"content": "a", "status": "done"}]},
    ):
        with pytest.raises(ToolInputError):
            TodoWriteTool().parse(raw)
    with pytest.raises(ToolInputError):
        TodoReadTool().parse({"extra": 1})


def test_declarations(root: Path) -> None:
    write, read = TodoWriteTool(), TodoReadTool()
    write_args = write.parse({"todos": []})
    assert write.concurrency_for(write_args) is Concurrency.SEQUENTIAL
    assert write.access_for(write_args) == Access(writes=("todo:",))
    assert read.concurrency_for({}) is Concurrency.SAFE
    assert read.access_for({}) == Access(reads=("todo:",))
    assert Access(writes=("todo:",)).conflicts_with(Access(reads=("todo:",)))
    assert write.interrupt is Interrupt.BLOCK
    assert read.interrupt is Interrupt.BLOCK
    assert (write.name, read.name) == ("todo_write", "todo_read")
