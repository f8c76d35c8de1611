"""Batch sessions honour shell hooks: `run_batch(hooks=...)` and ``toolweave batch``
with a `toolweave.toml`, each session's hooks run in its own workspace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_support import step_calls, step_text, task_line
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.cluster import load_records, run_batch
from toolweave.events import Event, ToolResultReady
from toolweave.execution import Hooks
from toolweave.loop import AgentConfig, HookCommand, HookSettings

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """trio on its real clock: a hook is a real process, and the autojump clock
    would jump to its timeout while the process runs."""
    return request.param


DENY_ADD = HookCommand(
    command='cat > hook-input.json; echo "no adding in a batch" >&2; exit 2',
    matcher="add",
)


def _tasks(tmp_path: Path, ids: list[str]) -> Path:
    """One task per id, each in its own workspace, calling `add` once."""
    lines = []
    for task_id in ids:
        workspace = tmp_path / f"ws-{task_id}"
        workspace.mkdir()
        steps = [step_calls(("c1", "add", {"a": 1, "b": 2})), step_text("done")]
        lines.append(task_line(task_id, steps, workspace=str(workspace)))
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _results(events: list[tuple[str, Event]]) -> list[tuple[str, str, bool]]:
    return [
        (sid, e.result.text, e.result.is_error)
        for sid, e in events
        if isinstance(e, ToolResultReady)
    ]


def _hook_input(tmp_path: Path, task_id: str) -> object:
    return json.loads((tmp_path / f"ws-{task_id}" / "hook-input.json").read_text())


async def test_every_session_runs_the_hooks_in_its_own_workspace(
    tmp_path: Path,
) -> None:
    tasks = _tasks(tmp_path, ["t1", "t2"])
    events: list[tuple[str, Event]] = []
    stats = await run_batch(
        tasks,
        output=tmp_path / "out.jsonl",
        tools="cluster_support:batch_tools",
        hooks=HookSettings(PreToolUse=(DENY_ADD,)),
        sink=lambda sid, event: events.append((sid, event)),
    )
    assert (stats.completed, stats.failed) == (2, 0)
    results = _results(events)
    assert len(results) == 2
    assert all("no adding in a batch" in text and error for _, text, error in results)
    for task_id in ("t1", "t2"):
        assert _hook_input(tmp_path, task_id) == {
            "hook_event_name": "PreToolUse",
            "session_id": task_id,
            "cwd": str(tmp_path / f"ws-{task_id}"),
            "tool_name": "add",
            "tool_input": {"a": 1, "b": 2},
            "tool_use_id": "c1",
        }


async def test_no_hooks_configured_runs_the_calls(tmp_path: Path) -> None:
    tasks = _tasks(tmp_path, ["t1"])
    events: list[tuple[str, Event]] = []
    await run_batch(
        tasks,
        output=tmp_path / "out.jsonl",
        tools="cluster_support:batch_tools",
        hooks=HookSettings(),
        sink=lambda sid, event: events.append((sid, event)),
    )
    assert [(text, error) for _, text, error in _results(events)] == [("3", False)]


async def test_shell_hooks_beside_config_hooks_is_a_clear_error_per_session(
    tmp_path: Path,
) -> None:
    tasks = _tasks(tmp_path, ["t1"])
    stats = await run_batch(
        tasks,
        output=tmp_path / "out.jsonl",
        tools="cluster_support:batch_tools",
        config=AgentConfig(hooks=Hooks()),
        hooks=HookSettings(PreToolUse=(DENY_ADD,)),
    )
    assert stats.failed == 1
    (record,) = load_records(tmp_path / "out.jsonl").values()
    assert "shell hooks or config.hooks, not both" in record.reason
    assert not (tmp_path / "ws-t1" / "hook-input.json").exists()


def test_toolweave_batch_honours_the_project_toolweave_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "toolweave.toml").write_text(
        "[[hooks.PreToolUse]]\n"
        f"command = {json.dumps(DENY_ADD.command)}\n"
        'matcher = "add"\n'
    )
    monkeypatch.chdir(project)
    tasks = _tasks(tmp_path, ["t1"])
    result = CliRunner().invoke(
        app,
        [
            "batch",
            str(tasks),
            "--tools",
            "cluster_support:batch_tools",
            "--no-store",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = _hook_input(tmp_path, "t1")
    assert isinstance(payload, dict)
    assert (payload["session_id"], payload["tool_name"]) == ("t1", "add")
    (record,) = load_records(tmp_path / "tasks.results.jsonl").values()
    assert record.status == "completed"


def test_toolweave_batch_refuses_an_invalid_hook_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (project / "toolweave.toml").write_text('[[hooks.PreToolUse]]\ncommand = ""\n')
    monkeypatch.chdir(project)
    tasks = _tasks(tmp_path, ["t1"])
    result = CliRunner().invoke(
        app, ["batch", str(tasks), "--tools", "none", "--no-store", "--no-progress"]
    )
    assert result.exit_code == 2, result.output
    assert "hooks.PreToolUse.0.command" in result.output
    assert not (tmp_path / "tasks.results.jsonl").exists()
