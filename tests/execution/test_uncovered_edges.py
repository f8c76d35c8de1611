"""Edges of the lifecycle the other files leave out, each through the runner's API.

- accept_edits with no workspace: an edit nobody can ask about is denied, and
  the denial says a workspace is what accept_edits lacks (not only a rule);
- a start barrier that holds a call past the run's deadline: the call never
  starts, answered "not run" by the deadline;
- a large result whose file cannot be written leaves no half-written file,
  nor the name it reserved, behind.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from lifecycle_helpers import call, registry_with
from pydantic import BaseModel

from toolweave.execution import PermissionMode, RunDeadline, ToolRunner, save_result
from toolweave.messages import ToolCall
from toolweave.tools import (
    Access,
    PermissionCheck,
    SessionState,
    Tool,
    ToolContext,
    tool,
)

ran: list[str] = []


@tool(name="patch", access=lambda args: Access(writes=[f"fs:/w/{args['path']}"]))
async def patch(path: str) -> str:
    """Edits one file."""
    ran.append(path)
    return "patched"


class _Path(BaseModel):
    path: str


class _Editor(Tool):
    """An edit that asks for itself (what accept_edits approves inside a workspace)."""

    def __init__(self) -> None:
        super().__init__(name="editor", description="Edits.", input_model=_Path)

    def access_for(self, args: dict[str, Any]) -> Access:
        return Access(writes=[f"fs:/w/{args['path']}"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        return PermissionCheck("ask", "may I edit?")

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        ran.append(str(args["path"]))
        return "edited"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


@pytest.mark.anyio
async def test_accept_edits_without_a_workspace_says_so_in_the_denial(
    tmp_path: Path,
) -> None:
    runner = ToolRunner(
        registry_with(_Editor()),
        state=SessionState(workspace=None, results_dir=tmp_path / "session"),
        mode=PermissionMode.ACCEPT_EDITS,
    )
    result = await runner(call("c1", "editor", path="a.py"))
    assert result.is_error and ran == []
    assert "a workspace for accept_edits to judge edits by" in result.text
    assert "no workspace is set" in result.text
    # the workspace comes first among the ways out; the allow rule is offered too
    assert result.text.index("a workspace") < result.text.index("permissions.allow")


@pytest.mark.anyio
async def test_a_start_barrier_past_the_deadline_leaves_the_call_not_run(
    tmp_path: Path,
) -> None:
    bound = "the run's wall-clock budget (1 s)"
    passed: list[str] = []

    async def barrier(item: ToolCall) -> str | None:
        await anyio.sleep(0.3)  # the bound falls while the call waits here
        passed.append(item.id)
        return None  # it may start, but the deadline has fallen meanwhile

    runner = ToolRunner(
        registry_with(patch),
        state=SessionState(workspace=tmp_path, results_dir=tmp_path / "session"),
        mode=PermissionMode.BYPASS,
        before_start=barrier,
        deadline=RunDeadline(at=anyio.current_time() + 0.1, what=bound, grace=0.1),
    )
    result = await runner(call("c1", "patch", path="a.py"))
    assert passed == ["c1"] and ran == []
    assert result.is_error and result.synthetic
    assert result.text == (
        f"Not run: {bound} ran out before the call to 'patch' could start."
        " The tool 'patch' was never started."
    )


def test_a_result_file_that_cannot_be_written_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)  # the fault: the rename fails
    with pytest.raises(OSError, match="No space left"):
        save_result(tmp_path / "results", "c1", "x" * 100)
    monkeypatch.undo()
    assert [p.name for p in (tmp_path / "results").rglob("*") if p.is_file()] == []
    saved = save_result(tmp_path / "results", "c1", "x" * 100)  # the name is free
    assert saved.read_text() == "x" * 100
