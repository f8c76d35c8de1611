"""`load_hook_settings`: a library user's agent honours the `toolweave.toml` hooks
``toolweave run`` honours, read from the same files with the same layering.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolweave as tw
from toolweave import ConfigError
from toolweave.cli._settings import load_settings
from toolweave.loop import (
    HookCommand,
    HookSettings,
    build_shell_hooks,
    load_hook_settings,
)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """trio on its real clock: hooks are real processes (see tests/cli/conftest.py)."""
    return request.param


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("TOOLWEAVE_HOME", str(path))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".git").mkdir(parents=True)
    return path


def _hook_table(event: str, command: str, **extra: str) -> str:
    rows = "".join(f"{key} = {json.dumps(value)}\n" for key, value in extra.items())
    return f"[[hooks.{event}]]\ncommand = {json.dumps(command)}\n{rows}"


def test_no_files_no_hooks(home: Path, project: Path) -> None:
    del home
    assert load_hook_settings(project) == HookSettings()


def test_the_users_hooks_then_the_projects_and_nothing_else(
    home: Path, project: Path
) -> None:
    (home / "config.toml").write_text(
        'model = "openai:gpt-4.1"\n' + _hook_table("PreToolUse", "user-pre")
    )
    (project / "toolweave.toml").write_text(
        "[concurrency]\nmax_concurrency = 3\n"
        + _hook_table("PreToolUse", "project-pre", matcher="bash")
        + _hook_table("Stop", "project-stop")
    )
    nested = project / "src" / "pkg"
    nested.mkdir(parents=True)
    hooks = load_hook_settings(nested)
    assert hooks.PreToolUse == (
        HookCommand(command="user-pre"),
        HookCommand(command="project-pre", matcher="bash"),
    )
    assert hooks.Stop == (HookCommand(command="project-stop"),)
    assert hooks.PostToolUse == hooks.PostToolUseFailure == hooks.RunStart == ()
    assert hooks == load_settings(nested).settings.hooks  # the CLI reads the same


def test_a_toolweave_toml_above_the_git_root_is_not_read(
    home: Path, tmp_path: Path
) -> None:
    del home
    (tmp_path / "toolweave.toml").write_text(_hook_table("Stop", "outside"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    assert load_hook_settings(repo) == HookSettings()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[[hooks.PreToolUse]]\ncommand = ""\n', r"hooks\.PreToolUse\.0\.command"),
        ("[[hooks.PreToolUse]]\ncommand = 'x'\ntimeout = 0\n", r"\.timeout"),
        ("[[hooks.Unknown]]\ncommand = 'x'\n", r"hooks\.Unknown"),
        ("[hooks\n", "invalid TOML"),
    ],
)
def test_a_bad_hook_table_names_the_file_and_the_key(
    home: Path, project: Path, text: str, expected: str
) -> None:
    del home
    (project / "toolweave.toml").write_text(text)
    with pytest.raises(ConfigError, match=expected) as caught:
        load_hook_settings(project)
    assert str(project / "toolweave.toml") in str(caught.value)


def test_hook_settings_add_up_in_order() -> None:
    a = HookSettings(PreToolUse=(HookCommand(command="a"),))
    b = HookSettings(
        PreToolUse=(HookCommand(command="b"),), Stop=(HookCommand(command="s"),)
    )
    assert (a + b).PreToolUse == (HookCommand(command="a"), HookCommand(command="b"))
    assert (a + b).Stop == (HookCommand(command="s"),)
    assert (b + a).PreToolUse[0].command == "b"


@tw.tool(access=lambda a: tw.Access(writes=["k:x"]))
async def touch() -> str:
    """Change something."""
    touched.append(1)
    return "touched"


touched: list[int] = []


@pytest.mark.anyio
async def test_a_library_agent_runs_the_projects_pre_tool_use_hook(
    home: Path, project: Path
) -> None:
    del home
    (project / "toolweave.toml").write_text(
        _hook_table(
            "PreToolUse",
            "cat > seen.json; echo 'the project says no' >&2; exit 2",
            matcher="touch",
        )
    )
    touched.clear()
    hooks = build_shell_hooks(
        load_hook_settings(project), cwd=project, session_id="lib-1"
    )
    model = tw.models.ScriptedModel(
        [
            tw.ModelResponse(
                [tw.ToolCall("c1", "touch", {})], stop_reason=tw.StopReason.TOOL_USE
            ),
            tw.ModelResponse([tw.Text("ok")]),
        ]
    )
    agent = tw.Agent(model, [touch], config=tw.AgentConfig(hooks=hooks))
    result = await agent.run("go")
    (answer,) = result.messages[2].tool_results
    assert answer.is_error and "the project says no" in answer.text
    assert touched == []
    seen = json.loads((project / "seen.json").read_text())
    assert (seen["session_id"], seen["tool_name"], seen["cwd"]) == (
        "lib-1",
        "touch",
        str(project),
    )
