"""The built-in tools' declarations, honoured by the real Dispatcher and ToolRunner.

A batch [read a, read b, edit a, read c] over a real git repository: the edit
of a.py must wait for the read of a.py, while the read of c.py overlaps the
edit. Proved by rendezvous: the read of a.py is held until the test has seen
the other reads running and the edit not; the read of c.py is held until the
edit has started, so it is still running while the edit runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolweave.events import Event, ToolRunning
from toolweave.execution import PermissionMode, ToolRunner
from toolweave.messages import ToolCall, ToolResult
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools import SessionState, Tool, ToolContext, ToolRegistry
from toolweave.tools.builtin import ReadTool, coding_tools

pytestmark = pytest.mark.anyio


class HeldRead(ReadTool):
    """The real read tool, held at the start of a call until its path's gate opens."""

    def __init__(self, root: Path, gates: dict[str, anyio.Event]) -> None:
        super().__init__(root)
        self.gates = gates

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        gate = self.gates.get(args["path"])
        if gate is not None:
            await gate.wait()
        return await super().call(args, ctx)


def _git_repo(root: Path) -> None:
    for name in ("a.py", "b.py", "c.py"):
        (root / name).write_text(f"NAME = {name[0]!r}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "init"]):
        subprocess.run([*git, *cmd], cwd=root, check=True, capture_output=True)


def _registry(root: Path, gates: dict[str, anyio.Event]) -> ToolRegistry:
    tools: list[Tool] = [HeldRead(root, gates)]
    tools += [t for t in coding_tools(root) if t.name != "read"]
    return ToolRegistry(tools)


async def test_edit_waits_for_its_read_while_other_reads_overlap(root: Path) -> None:
    _git_repo(root)
    log: list[tuple[str, str]] = []
    running = {cid: anyio.Event() for cid in ("ra", "rb", "ed", "rc")}
    gates = {"a.py": anyio.Event(), "c.py": running["ed"]}

    def on_event(event: Event) -> None:
        if isinstance(event, ToolRunning):
            log.append(("running", event.call_id))
            running[event.call_id].set()

    def on_started(call: ToolCall) -> None:
        log.append(("started", call.id))

    def on_completed(call: ToolCall, result: ToolResult) -> None:
        log.append(("completed", call.id))

    state = SessionState(workspace=root)
    registry = _registry(root, gates)
    runner = ToolRunner(
        registry, state=state, on_event=on_event, mode=PermissionMode.ACCEPT_EDITS
    )
    calls = [
        ToolCall("ra", "read", {"path": "a.py"}),
        ToolCall("rb", "read", {"path": "b.py"}),
        ToolCall(
            "ed", "edit", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"}
        ),
        ToolCall("rc", "read", {"path": "c.py"}),
    ]
    results: list[ToolResult] = []
    async with Dispatcher(ConcurrencyConfig(policy="conflict")) as dispatcher:

        async def dispatch() -> None:
            results.extend(
                await dispatcher.dispatch(
                    calls, registry, runner, on_started, on_completed
                )
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(dispatch)
            with anyio.fail_after(
                30
            ):  # a schedule that serialises them never gets here
                for cid in ("ra", "rb", "rc"):
                    await running[cid].wait()
            await anyio.wait_all_tasks_blocked()
            # reads of three files run together; the edit of a.py waits for its read
            assert not running["ed"].is_set()
            assert ("completed", "ra") not in log
            gates["a.py"].set()

        # the edit began only after the read of its own file finished ...
        assert log.index(("running", "ed")) > log.index(("completed", "ra"))
        # ... and the read of c.py was running all the while the edit started
        assert log.index(("running", "rc")) < log.index(("running", "ed"))
        assert log.index(("completed", "rc")) > log.index(("running", "ed"))
        # a waiting call takes its slot (and fires on_started) only when ready
        assert [cid for kind, cid in log if kind == "started"] == [
            "ra",
            "rb",
            "rc",
            "ed",
        ]

        assert [r.call_id for r in results] == ["ra", "rb", "ed", "rc"]
        assert not any(r.is_error for r in results), [r.text for r in results]
        assert results[0].text == "     1\tNAME = 'a'"
        assert results[2].text.startswith("Edited a.py: replaced 1 occurrence.")
        assert results[3].text == "     1\tNAME = 'c'"

        diff = await dispatcher.dispatch(
            [
                ToolCall(
                    "gd", "bash", {"command": "git diff --stat && git status --short"}
                )
            ],
            registry,
            runner,
        )
    assert diff[0].text.splitlines()[-1] == " M a.py"
    assert "a.py | 2 +-" in diff[0].text
