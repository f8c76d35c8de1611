"""The sandbox end to end: tw.Agent, the real bash tool, Landlock and bwrap (issue 11).

The classifier is made wrong on purpose (it calls a writer read-only), so the
writer goes down the parallel path; PreToolUse hooks hold both bash calls
until each is inside, which proves they overlapped (a serial schedule would
never finish, and `fail_after` turns that into a failure). What must hold is
that the file is never written and the model is told why, and that the model
can then have the command run on its own with ``writes: true``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

import toolweave as tw
from toolweave.events import ToolResultReady
from toolweave.execution import (
    Hooks,
    PermissionMode,
    PreToolUseDecision,
    PreToolUseInput,
)
from toolweave.models import ScriptedModel
from toolweave.tools.builtin.bash import _tool as bash_module
from toolweave.tools.builtin.sandbox._sandbox import Backend, backend_available

BYPASS = PermissionMode.BYPASS  # the sandbox is under test, not permissions

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: these tools wait on real processes."""
    return str(request.param)


@pytest.fixture(params=["landlock", "bwrap"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each sandbox backend this machine has."""
    name: Backend = request.param
    if not backend_available(name):
        pytest.skip(f"{name} is not available here")
    return name


def _bash(call_id: str, command: str, **extra: object) -> tw.ToolCall:
    return tw.ToolCall(call_id, "bash", {"command": command, **extra})


def _turn(*calls: tw.ToolCall) -> tw.ModelResponse:
    return tw.ModelResponse(list(calls), stop_reason=tw.StopReason.TOOL_USE)


class BothInside:
    """Holds each of two calls in its PreToolUse hook until the other is inside too."""

    def __init__(self, *call_ids: str) -> None:
        self.events = {call_id: anyio.Event() for call_id in call_ids}

    async def hook(self, data: PreToolUseInput) -> PreToolUseDecision:
        mine = self.events.get(data.call.id)
        if mine is not None:
            mine.set()
            for event in self.events.values():
                await event.wait()
        return PreToolUseDecision()


async def _run(agent: tw.Agent, prompt: str) -> dict[str, tw.ToolResult]:
    results: dict[str, tw.ToolResult] = {}
    with anyio.fail_after(60):
        async for event in agent.run_stream(prompt):
            if isinstance(event, ToolResultReady):
                results[event.result.call_id] = event.result
            if isinstance(event, tw.events.RunFinished):
                assert event.reason is tw.CompletionReason.COMPLETED
    return results


async def test_a_writer_forced_through_the_parallel_path_writes_nothing(
    tmp_path: Path, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data.txt").write_text("data\n")
    monkeypatch.setattr(
        bash_module, "classify_bash", lambda *_, **__: tw.Concurrency.SAFE
    )
    script = [
        # exit 0 despite the refused write, so the failure does not abort t2
        _turn(
            _bash("t1", "echo pwned > forced.txt; echo tried"),
            _bash("t2", "cat data.txt"),
        ),
        _turn(_bash("t3", "echo pwned > forced.txt", writes=True)),
        tw.ModelResponse([tw.Text("done")]),
    ]
    inside = BothInside("t1", "t2")
    hooks = Hooks()
    hooks.pre_tool_use("bash")(inside.hook)
    agent = tw.Agent(
        ScriptedModel(script),
        tw.tools.coding_tools(tmp_path, sandbox_backend=backend),
        config=tw.AgentConfig(workspace=tmp_path, hooks=hooks, permission_mode=BYPASS),
    )
    results = await _run(agent, "Write forced.txt and read data.txt.")

    first = results["t1"]
    assert first.text.startswith("bash: line 1: forced.txt: ")
    assert f"judged read-only, so it ran in the read-only sandbox ({backend})" in (
        first.text
    )
    assert '"writes": true' in first.text
    assert results["t2"].text == "data\n" and not results["t2"].is_error
    # the write never happened in the parallel turn; asked again alone, it runs
    assert not results["t3"].is_error
    assert (tmp_path / "forced.txt").read_text() == "pwned\n"


async def test_without_the_retry_no_file_is_left_behind(
    tmp_path: Path, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        bash_module, "classify_bash", lambda *_, **__: tw.Concurrency.SAFE
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [
        _turn(
            # each ends with exit 0: a failure would abort its sibling
            _bash("t1", "touch made.txt; mkdir made.d; echo x >> ../outside/f; :"),
            _bash("t2", "rm -rf ../outside; ls"),
        ),
        tw.ModelResponse([tw.Text("done")]),
    ]
    inside = BothInside("t1", "t2")
    hooks = Hooks()
    hooks.pre_tool_use("bash")(inside.hook)
    agent = tw.Agent(
        ScriptedModel(script),
        tw.tools.coding_tools(workspace, sandbox="off", sandbox_backend=backend),
        config=tw.AgentConfig(workspace=workspace, hooks=hooks, permission_mode=BYPASS),
    )
    results = await _run(agent, "go")
    assert list(workspace.iterdir()) == []
    assert outside.is_dir() and list(outside.iterdir()) == []
    for call_id in ("t1", "t2"):
        assert "read-only sandbox" in results[call_id].text


def _git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


async def test_workspace_write_from_agent_config(
    tmp_path: Path, backend: Backend
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    _git_init(workspace)
    config_before = (workspace / ".git/config").read_bytes()
    outside = tmp_path / "outside"
    outside.mkdir()
    script = [
        _turn(_bash("t1", "echo b > b.txt && git add -A && git status --short")),
        _turn(_bash("t2", f"echo x > {outside}/f")),
        _turn(_bash("t3", "git config core.fsmonitor 'touch pwned'")),
        tw.ModelResponse([tw.Text("done")]),
    ]
    agent = tw.Agent(
        ScriptedModel(script),
        tw.tools.coding_tools(workspace, sandbox="off", sandbox_backend=backend),
        config=tw.AgentConfig(
            workspace=workspace, sandbox="workspace-write", permission_mode=BYPASS
        ),
    )
    assert agent.state.sandbox is tw.SandboxMode.WORKSPACE_WRITE
    results = await _run(agent, "go")
    assert (workspace / "b.txt").read_text() == "b\n"
    assert "A  b.txt" in results["t1"].text
    assert results["t2"].is_error and "confined to the workspace" in results["t2"].text
    assert list(outside.iterdir()) == []
    assert (workspace / ".git/config").read_bytes() == config_before


def test_agent_config_sandbox_is_checked() -> None:
    with pytest.raises(tw.ConfigError, match="sandbox mode must be one of"):
        tw.AgentConfig(sandbox="loose")  # type: ignore[arg-type]
    assert tw.AgentConfig(sandbox="read-only").sandbox is tw.SandboxMode.READ_ONLY
    assert tw.AgentConfig().sandbox is None
