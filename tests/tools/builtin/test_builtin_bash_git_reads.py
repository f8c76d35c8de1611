"""A git read judged read-only runs no program the repository configures.

The agent can write ``.git/config`` with its own tools, so a "read" must not
run ``core.fsmonitor``, a textconv driver or ``diff.external``. Each case first
shows with plain git that the configuration is live, then that the bash tool's
read runs without it (detected by the programs' output, which the sandbox would
not stop).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from builtin_support import run

from toolweave.tools import Concurrency, SessionState
from toolweave.tools.builtin import BashTool

pytestmark = pytest.mark.anyio

_GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr


@pytest.fixture
def repo(root: Path) -> Path:
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=root, check=True)
    subprocess.run([*_GIT, "commit", "-qm", "one"], cwd=root, check=True)
    (root / "a.txt").write_text("a\nb\n")
    (root / ".gitattributes").write_text("*.txt diff=conv\n")
    return root


@pytest.mark.parametrize(
    "command",
    [
        "git diff",
        "git log -p -1",
        "git show HEAD",
        # inside read-only wrappers the flags used to be missing (red team)
        "timeout 5 git diff",
        "nice git log -p -1",
        "command git show HEAD",
        "time git diff",
        "ls && nice -n 1 timeout -s KILL 5 git diff | cat",
    ],
)
async def test_textconv_does_not_run(
    repo: Path, state: SessionState, command: str
) -> None:
    _git(repo, "config", "diff.conv.textconv", "sed s/^/CONV:/")
    if command == "git diff":
        assert "CONV:" in _git(repo, "diff")  # the driver is live
    tool = BashTool(repo)
    assert tool.concurrency_for(tool.parse({"command": command})) is Concurrency.SAFE
    out = await run(tool, {"command": command}, state)
    assert "CONV:" not in out
    assert "a" in out


async def test_an_external_diff_does_not_run(repo: Path, state: SessionState) -> None:
    _git(repo, "config", "diff.external", 'sh -c "echo EXTERNAL" --')
    assert "EXTERNAL" in _git(repo, "diff")
    out = await run(BashTool(repo), {"command": "git diff"}, state)
    assert "EXTERNAL" not in out
    assert "+b" in out


async def test_fsmonitor_does_not_run(repo: Path, state: SessionState) -> None:
    _git(repo, "config", "core.fsmonitor", "echo FSMON >&2; false")
    assert "FSMON" in _git(repo, "status")
    out = await run(BashTool(repo), {"command": "git status"}, state)
    assert "FSMON" not in out
    assert "a.txt" in out


async def test_status_does_not_rewrite_the_index(
    repo: Path, state: SessionState
) -> None:
    index = repo / ".git" / "index"
    (repo / "a.txt").touch()  # stat-dirty: a plain status would refresh the index
    before = index.read_bytes()
    await run(BashTool(repo), {"command": "git status --short"}, state)
    assert index.read_bytes() == before


def test_overrides_are_appended_after_the_users_own() -> None:
    from toolweave.tools.builtin.bash._git import git_read_env

    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name"}
    extra = git_read_env(env)
    assert "GIT_CONFIG_KEY_0" not in extra  # the user's entry is kept
    assert extra["GIT_CONFIG_KEY_1"] == "core.fsmonitor"
    count = int(extra["GIT_CONFIG_COUNT"])
    keys = {extra[f"GIT_CONFIG_KEY_{i}"] for i in range(1, count)}
    assert {"core.pager", "diff.external", "gpg.program"} <= keys
    assert git_read_env({"GIT_CONFIG_COUNT": "x"})["GIT_CONFIG_KEY_0"] == (
        "core.fsmonitor"
    )


async def test_a_users_own_git_config_env_still_applies(
    repo: Path, state: SessionState
) -> None:
    env = {
        **__import__("os").environ,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.abbrev",
        "GIT_CONFIG_VALUE_0": "12",
    }
    out = await run(BashTool(repo, env=env), {"command": "git log -1 --oneline"}, state)
    assert len(out.split()[0]) == 12
