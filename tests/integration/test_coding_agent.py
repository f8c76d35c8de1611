"""An agent run over a real git repository with the real coding tools (issue 6, done-when).

Overlap is proven by rendezvous, not timing: PreToolUse hooks hold calls until
their partners are inside, so a schedule that serialised them would never finish
(and `fail_after` turns that into a failure).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolweave as tw
from toolweave.events import (
    DeclarationViolation,
    ToolResultReady,
    ToolRunning,
    ToolUseStarted,
)
from toolweave.execution import (
    Hooks,
    PermissionMode,
    PreToolUseDecision,
    PreToolUseInput,
)
from toolweave.models import ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: these tools wait on real files and processes."""
    return str(request.param)


def _repo(root: Path) -> None:
    for name in ("a", "b", "c", "d", "e"):
        (root / f"{name}.py").write_text(f"def {name}():\n    return '{name}'\n")
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "."],
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"],
    ):
        subprocess.run(argv, cwd=root, check=True)


def _call(i: int, name: str, **args: Any) -> tw.ToolCall:
    return tw.ToolCall(f"t{i}", name, args)


def _response(*calls: tw.ToolCall) -> tw.ModelResponse:
    return tw.ModelResponse(list(calls), stop_reason=tw.StopReason.TOOL_USE)


class Rendezvous:
    """Holds the three reads of turn 1 until all three are inside their calls, and
    the edit of a.py and the read of e.py until both are inside theirs."""

    def __init__(self) -> None:
        self.inside: set[str] = set()
        self.reads_in = anyio.Event()
        self.edit_in = anyio.Event()
        self.read_e_in = anyio.Event()

    async def hook(self, data: PreToolUseInput) -> PreToolUseDecision:
        call_id = data.call.id
        if call_id in {"t1", "t2", "t3"}:
            self.inside.add(call_id)
            if len(self.inside) == 3:
                self.reads_in.set()
            await self.reads_in.wait()
        elif call_id == "t6":
            self.edit_in.set()
            await self.read_e_in.wait()
        elif call_id == "t7":
            self.read_e_in.set()
            await self.edit_in.wait()
        return PreToolUseDecision()


async def test_reads_overlap_edit_waits_for_its_file_and_git_diff_sees_it(
    tmp_path: Path,
) -> None:
    _repo(tmp_path)
    script = [
        _response(
            _call(1, "read", path="a.py"),
            _call(2, "read", path="b.py"),
            _call(3, "read", path="c.py"),
            _call(4, "grep", pattern="def ", path="."),
        ),
        _response(
            _call(5, "read", path="d.py"),
            _call(
                6, "edit", path="a.py", old_string="return 'a'", new_string="return 'A'"
            ),
            _call(7, "read", path="e.py"),
        ),
        _response(_call(8, "bash", command="git diff --stat && git diff")),
        tw.ModelResponse([tw.Text("Changed a() to return 'A'.")]),
    ]
    rendezvous = Rendezvous()
    hooks = Hooks()
    hooks.pre_tool_use("read")(rendezvous.hook)
    hooks.pre_tool_use("edit")(rendezvous.hook)
    agent = tw.Agent(
        ScriptedModel(script),
        tw.tools.coding_tools(tmp_path),
        # the built-in tools' declarations are honest: the audit stops nothing
        config=tw.AgentConfig(
            workspace=tmp_path,
            hooks=hooks,
            audit="enforce",
            permission_mode=PermissionMode.ACCEPT_EDITS,  # the edit runs unasked
        ),
    )
    events: list[object] = []
    with anyio.fail_after(60):
        async for event in agent.run_stream("Make a() return 'A'."):
            events.append(event)

    finished = events[-1]
    assert [e for e in events if isinstance(e, DeclarationViolation)] == []
    assert isinstance(finished, tw.events.RunFinished)
    assert finished.reason is tw.CompletionReason.COMPLETED
    results = {
        e.result.call_id: e.result for e in events if isinstance(e, ToolResultReady)
    }
    assert sorted(results) == [f"t{i}" for i in range(1, 9)]
    assert not any(r.is_error for r in results.values()), results
    assert "return 'A'" in (tmp_path / "a.py").read_text()
    assert (
        "-    return 'a'" in results["t8"].text
        and "+    return 'A'" in results["t8"].text
    )

    order = [
        ("start", e.call.id)
        if isinstance(e, ToolUseStarted)
        else ("run", e.call_id)
        if isinstance(e, ToolRunning)
        else ("done", e.call.id)
        for e in events
        if isinstance(e, ToolUseStarted | ToolRunning | ToolResultReady)
    ]
    pos = {item: i for i, item in enumerate(order)}
    # the edit of a.py started only after the read of a.py (turn 1) finished
    assert pos[("done", "t1")] < pos[("run", "t6")]
    # the read of e.py overlapped the edit (the hooks' rendezvous needs both inside)
    assert pos[("run", "t6")] < pos[("done", "t7")]
    assert pos[("run", "t7")] < pos[("done", "t6")]
    # ToolUseStarted in call order within each turn
    started = [cid for kind, cid in order if kind == "start"]
    assert started == [f"t{i}" for i in range(1, 9)]
