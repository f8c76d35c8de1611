"""Real git and filesystem servers under the Dispatcher, in every policy.

Read-only MCP tools must run at once (proved by a rendezvous: each call waits on
entry until all of its group has entered, so a serial schedule could not finish),
and destructive ones must overlap nothing (proved from the start/end log and the
recorded overlaps). The writes' effects must be visible to the calls after them,
as in serial execution.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_support import Recorder, fs_config, git_config, lifecycle, running_ids

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, PolicyName
from toolweave.tools.mcp import open_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]

POLICIES: tuple[PolicyName, ...] = ("all_or_nothing", "partition", "rwlock", "conflict")


def _calls(specs: list[tuple[str, dict[str, Any]]]) -> list[tw.ToolCall]:
    return [tw.ToolCall(f"c{i}", name, args) for i, (name, args) in enumerate(specs)]


def _assert_alone(recorder: Recorder, call_id: str) -> None:
    """Nothing started or ended while `call_id` ran, and it overlapped nothing."""
    start = recorder.log.index(f"start {call_id}")
    assert recorder.log[start + 1] == f"end {call_id}", recorder.log
    assert recorder.overlapped_with(call_id) == set()


async def _dispatch(
    policy: PolicyName,
    calls: list[tw.ToolCall],
    registry: tw.ToolRegistry,
    recorder: Recorder,
) -> tuple[list[tw.ToolResult], list[str], list[str]]:
    started: list[str] = []
    completed: list[str] = []
    async with Dispatcher(ConcurrencyConfig(policy=policy)) as dispatcher:
        results = await dispatcher.dispatch(
            calls,
            registry,
            recorder,
            on_started=lambda c: started.append(c.id),
            on_completed=lambda c, r: completed.append(c.id),
        )
    return results, started, completed


async def test_read_only_tools_of_real_servers_run_at_once_in_every_policy(
    git_repo: Path, fs_server_js: Path, tmp_path: Path
) -> None:
    repo = str(git_repo)
    calls = _calls(
        [
            ("mcp__fs__read_text_file", {"path": f"{repo}/a.txt"}),
            ("mcp__fs__read_text_file", {"path": f"{repo}/b.txt"}),
            ("mcp__git__git_status", {"repo_path": repo}),
            ("mcp__git__git_log", {"repo_path": repo, "max_count": 1}),
            ("mcp__fs__list_directory", {"path": repo}),
            ("mcp__git__git_diff_unstaged", {"repo_path": repo}),
        ]
    )
    ids = [c.id for c in calls]
    configs = [git_config(git_repo), fs_config(fs_server_js, git_repo)]
    async with open_mcp_servers(configs) as toolset:
        registry = tw.ToolRegistry(toolset.tools)
        for policy in POLICIES:
            runner, events = lifecycle(registry, tmp_path)
            recorder = Recorder(runner)
            recorder.barrier(set(ids))  # all six must be inside at once
            results, started, _ = await _dispatch(policy, calls, registry, recorder)

            assert [r.call_id for r in results] == ids, policy
            assert [r.is_error for r in results] == [False] * 6, (policy, results)
            assert started == ids
            assert recorder.peak == 6
            assert sorted(running_ids(events)) == sorted(ids)
            assert results[0].text == "alpha\n"
            assert results[1].text == "beta\n"
            assert "working tree clean" in results[2].text
            assert "first commit" in results[3].text
            assert "[FILE] a.txt" in results[4].text


def _reset(repo: Path) -> None:
    (repo / "a.txt").write_text("alpha\n")
    subprocess.run(["git", "reset", "-q"], cwd=repo, check=True)


async def test_destructive_tools_of_real_servers_never_overlap_anything(
    git_repo: Path, fs_server_js: Path, tmp_path: Path
) -> None:
    repo = str(git_repo)
    calls = _calls(
        [
            ("mcp__fs__read_text_file", {"path": f"{repo}/a.txt"}),
            ("mcp__git__git_status", {"repo_path": repo}),
            ("mcp__fs__write_file", {"path": f"{repo}/a.txt", "content": "changed\n"}),
            ("mcp__fs__read_text_file", {"path": f"{repo}/a.txt"}),
            ("mcp__git__git_diff_unstaged", {"repo_path": repo}),
            ("mcp__git__git_add", {"repo_path": repo, "files": ["a.txt"]}),
            ("mcp__git__git_diff_staged", {"repo_path": repo}),
            ("mcp__fs__read_text_file", {"path": f"{repo}/b.txt"}),
        ]
    )
    configs = [git_config(git_repo), fs_config(fs_server_js, git_repo)]
    async with open_mcp_servers(configs) as toolset:
        registry = tw.ToolRegistry(toolset.tools)
        for policy in POLICIES:
            _reset(git_repo)
            runner, _ = lifecycle(registry, tmp_path)
            recorder = Recorder(runner)
            if policy != "all_or_nothing":  # which runs the whole batch serially
                for group in ({"c0", "c1"}, {"c3", "c4"}, {"c6", "c7"}):
                    recorder.barrier(group)
            results, started, completed = await _dispatch(
                policy, calls, registry, recorder
            )

            assert [r.is_error for r in results] == [False] * 8, (policy, results)
            assert started == [c.id for c in calls]
            _assert_alone(recorder, "c2")  # write_file: destructive
            _assert_alone(recorder, "c5")  # git_add: mutating
            # Serial-equivalent: what ran after a write sees it.
            assert results[0].text == "alpha\n"
            assert results[3].text == "changed\n"
            assert "-alpha\n+changed" in results[4].text
            assert "-alpha\n+changed" in results[6].text
            assert completed.index("c2") > max(
                completed.index("c0"), completed.index("c1")
            )
            expected_peak = 1 if policy == "all_or_nothing" else 2
            assert recorder.peak == expected_peak, (policy, recorder.log)
