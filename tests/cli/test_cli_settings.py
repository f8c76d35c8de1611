"""Settings: layered files, accumulated rules, sources, clear errors, `toolweave config`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolweave._exceptions import ConfigError
from toolweave.cli import app
from toolweave.cli._build import agent_config, build_model, mcp_configs
from toolweave.cli._session_run import RunOptions, _prepare
from toolweave.cli._settings import find_project_config, load_settings
from toolweave.execution import PermissionMode

USER = """
model = "anthropic:claude-sonnet-4-5"

[concurrency]
policy = "rwlock"
max_concurrency = 4

[permissions]
deny = ["bash(rm:*)"]

[mcp_servers.git]
command = "uvx"
args = ["mcp-server-git"]

[budgets]
max_cost_usd = 2.5
"""

PROJECT = """
[concurrency]
policy = "partition"
streaming_overlap = false

[permissions]
mode = "accept_edits"
deny = ["read(.env)"]
allow = ["bash(git status)"]

[[hooks.PreToolUse]]
matcher = "bash"
command = "./check.sh"

[mcp_servers.git]
command = "python3"
args = ["-m", "mcp_server_git"]
trusted = true
"""


def _write(home: Path, workspace: Path) -> None:
    (home / "config.toml").write_text(USER)
    (workspace / "toolweave.toml").write_text(PROJECT)


def test_layers_merge_with_later_values_winning_and_rules_accumulating(
    home: Path, workspace: Path
) -> None:
    _write(home, workspace)
    loaded = load_settings(
        workspace, environ={}, overrides={"model": "openai:gpt-4.1", "store": None}
    )
    s = loaded.settings
    assert s.model == "openai:gpt-4.1"
    assert s.concurrency.policy == "partition" and s.concurrency.max_concurrency == 4
    assert s.concurrency.streaming_overlap is False
    assert s.permissions.deny == (
        "bash(rm:*)",
        "read(.env)",
    )  # a project adds, never removes
    assert (
        s.permissions.allow == ("bash(git status)",)
        and s.permissions.mode == "accept_edits"
    )
    assert s.mcp_servers["git"].command == "python3" and s.mcp_servers["git"].trusted
    assert s.hooks.PreToolUse[0].command == "./check.sh"
    assert s.budgets.max_cost_usd == 2.5
    user, project = str(home / "config.toml"), str(workspace / "toolweave.toml")
    assert loaded.files == (home / "config.toml", workspace / "toolweave.toml")
    assert loaded.source_of("model") == "command line"
    assert loaded.source_of("concurrency.max_concurrency") == user
    assert loaded.source_of("concurrency.policy") == project
    assert loaded.source_of("permissions.deny[0]") == user
    assert loaded.source_of("permissions.deny[1]") == project
    assert loaded.source_of("mcp_servers.git.args[1]") == project
    assert loaded.source_of("budgets.max_iterations") == "default"


def test_the_environment_sets_the_model_below_flags(workspace: Path) -> None:
    loaded = load_settings(workspace, environ={"TOOLWEAVE_MODEL": "anthropic:claude-x"})
    assert loaded.settings.model == "anthropic:claude-x"
    assert loaded.source_of("model") == "env TOOLWEAVE_MODEL"


def test_the_project_file_is_found_upwards_but_not_above_the_git_root(
    workspace: Path,
) -> None:
    (workspace / "toolweave.toml").write_text('model = "anthropic:a"\n')
    deep = workspace / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_project_config(deep) == workspace / "toolweave.toml"
    (workspace.parent / "toolweave.toml").write_text('model = "anthropic:b"\n')
    (workspace / "toolweave.toml").unlink()
    assert find_project_config(deep) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("model = \n", "invalid TOML"),
        ('[concurrency]\npolicy = "fastest"\n', "concurrency.policy"),
        ("[concurrency]\nmax_concurrency = 0\n", "concurrency.max_concurrency"),
        ('colour = "blue"\n', "colour: Extra inputs are not permitted"),
        ('[[hooks.PreToolUse]]\nmatcher = "bash"\n', "hooks.PreToolUse.0.command"),
    ],
)
def test_a_bad_file_is_a_config_error_naming_file_and_key(
    workspace: Path, text: str, problem: str
) -> None:
    (workspace / "toolweave.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"toolweave\.toml") as info:
        load_settings(workspace, environ={})
    assert problem in str(info.value)


def test_settings_become_runtime_objects(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # the model needs one
    _write(home, workspace)
    s = load_settings(workspace, environ={}).settings
    config = agent_config(s, workspace=workspace, hooks=None, ask=None)
    assert (
        config.concurrency.policy == "partition"
        and config.concurrency.max_concurrency == 4
    )
    assert config.permission_mode is PermissionMode.ACCEPT_EDITS
    assert config.permissions is not None and len(config.permissions.deny) == 2
    assert config.max_cost_usd == 2.5 and config.workspace == workspace
    assert (
        agent_config(
            s, workspace=workspace, hooks=None, ask=None, mode="plan"
        ).permission_mode
        is PermissionMode.PLAN
    )
    (git,) = mcp_configs(s.mcp_servers, workspace)
    assert (
        git.name == "git"
        and git.args == ("-m", "mcp_server_git")
        and git.cwd == str(workspace)
        and git.trusted  # vouched for: its read-only tools may start early
    )
    model = build_model(s)
    assert model.name == "claude-sonnet-4-5"


def test_missing_or_bad_models_and_rules_are_config_errors(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="no model configured"):
        build_model(load_settings(workspace, environ={}).settings)
    bad = load_settings(
        workspace, environ={}, overrides={"model": "openai-compatible:llama"}
    ).settings
    with pytest.raises(ConfigError, match="base_url"):
        build_model(bad)
    (workspace / "toolweave.toml").write_text(
        '[permissions]\ndeny = ["bash(unclosed"]\n'
    )
    with pytest.raises(ConfigError, match="malformed permission rule"):
        agent_config(
            load_settings(workspace, environ={}).settings,
            workspace=workspace,
            hooks=None,
            ask=None,
        )
    (workspace / "toolweave.toml").write_text('[mcp_servers.x]\ntransport = "http"\n')
    with pytest.raises(ConfigError, match="mcp_servers"):
        mcp_configs(
            load_settings(workspace, environ={}).settings.mcp_servers, workspace
        )


def test_the_config_command_shows_values_and_their_sources(
    home: Path, workspace: Path
) -> None:
    _write(home, workspace)
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    lines = {
        line.split()[0]: line for line in result.output.splitlines() if line.strip()
    }
    assert "'partition'" in lines["concurrency.policy"]
    assert "project toolweave.toml" in lines["concurrency.policy"]
    assert "user config.toml" in lines["concurrency.max_concurrency"]
    assert "project toolweave.toml" in lines["permissions.deny[1]"]
    assert "'bash(rm:*)'" in lines["permissions.deny[0]"]
    assert (
        "default" in lines["budgets.max_iterations"]
        and "50" in lines["budgets.max_iterations"]
    )


def test_the_config_command_reports_a_bad_file(workspace: Path) -> None:
    (workspace / "toolweave.toml").write_text("[budgets]\nmax_iterations = -1\n")
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 2
    assert "budgets.max_iterations" in result.output


def test_resume_falls_back_to_the_sessions_own_model(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")  # the models need one
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    options = RunOptions(cwd=workspace)
    _, model, spec = _prepare(options, workspace, "anthropic:claude-from-session")
    assert (
        spec == "anthropic:claude-from-session" and model.name == "claude-from-session"
    )
    (workspace / "toolweave.toml").write_text('model = "openai:gpt-configured"\n')
    _, model, spec = _prepare(options, workspace, "anthropic:claude-from-session")
    assert (
        spec == "openai:gpt-configured"
    )  # configured settings win over the stored model


def test_bash_read_only_commands_reach_the_agent_config(workspace: Path) -> None:
    (workspace / "toolweave.toml").write_text(
        '[bash]\nread_only_commands = ["bd show", "gh api --method GET"]\n'
    )
    s = load_settings(workspace, environ={}).settings
    config = agent_config(s, workspace=workspace, hooks=None, ask=None)
    assert config.read_only_commands == ("bd show", "gh api --method GET")
    (workspace / "toolweave.toml").write_text('[bash]\nread_only_commands = [""]\n')
    with pytest.raises(ConfigError, match="read-only command prefix"):
        agent_config(
            load_settings(workspace, environ={}).settings,
            workspace=workspace,
            hooks=None,
            ask=None,
        )
    (workspace / "toolweave.toml").write_text('[bash]\nread_only = ["x"]\n')
    with pytest.raises(ConfigError, match="read_only"):
        load_settings(workspace, environ={})


def test_stream_setting_and_flag_reach_the_model(workspace: Path) -> None:
    (workspace / "toolweave.toml").write_text(
        'model = "openai-compatible:local"\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    default = build_model(load_settings(workspace, environ={}).settings)
    assert default.capabilities.streams_with_tools  # type: ignore[attr-defined]
    (workspace / "toolweave.toml").write_text(
        'model = "openai-compatible:local"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "stream = false\n"
    )
    off = build_model(load_settings(workspace, environ={}).settings)
    assert not off.capabilities.streams_without_tools  # type: ignore[attr-defined]
    flag_on = load_settings(workspace, environ={}, overrides={"stream": True}).settings
    assert build_model(flag_on).capabilities.streams_without_tools  # type: ignore[attr-defined]
