"""User read-only prefixes through AgentConfig: taught to the bash tool, run in parallel."""

from __future__ import annotations

from pathlib import Path

import pytest

import toolweave as tw
from toolweave._exceptions import ConfigError
from toolweave.messages import ToolCall
from toolweave.models import ScriptedModel
from toolweave.scheduling._gate import classify
from toolweave.tools import Concurrency
from toolweave.tools.builtin import BashTool, coding_tools


def _bash(tools: list[tw.Tool]) -> BashTool:
    (bash,) = [t for t in tools if isinstance(t, BashTool)]
    return bash


def test_agent_config_teaches_every_bash_tool(tmp_path: Path) -> None:
    tools = coding_tools(tmp_path)
    bash = _bash(tools)
    call = {"command": "bd show 12 | head"}
    assert bash.concurrency_for(bash.parse(call)) is Concurrency.SEQUENTIAL
    config = tw.AgentConfig(read_only_commands=["bd show", "mise tasks ls"])
    agent = tw.Agent(ScriptedModel([]), tools, config=config)
    assert bash.read_only_commands == (("bd", "show"), ("mise", "tasks", "ls"))
    plan = classify(ToolCall("c1", "bash", call), agent.registry)
    # parallel where a sandbox enforces read-only; the conservative core otherwise
    enforced = bash.sandbox.backend_for(tw.SandboxMode.READ_ONLY) is not None
    assert plan.parallel_ok is enforced
    for writer in ("bd close 12", "bd show 1 > out", "bd show $(rm x)"):
        assert not classify(
            ToolCall("c2", "bash", {"command": writer}), agent.registry
        ).parallel_ok


def test_teaching_twice_keeps_one_copy(tmp_path: Path) -> None:
    bash = BashTool(tmp_path, read_only_commands=["bd show"])
    bash.teach(["bd show", "gh api"])
    assert bash.read_only_commands == (("bd", "show"), ("gh", "api"))


@pytest.mark.parametrize("bad", [[""], ["'open"], ["/usr/bin/x y"]])
def test_bad_prefixes_are_config_errors(bad: list[str]) -> None:
    with pytest.raises(ConfigError):
        tw.AgentConfig(read_only_commands=bad)
