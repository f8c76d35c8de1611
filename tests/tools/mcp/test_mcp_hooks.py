"""PostToolUse hooks rewrite MCP tool output like any tool's (issue 13 item 11b).

Against the real mcp-server-time over stdio: a Python hook and a shell hook
(Claude Code's ``updatedMCPToolOutput``) each replace what the server returned;
the model sees the replacement, the hook saw the original.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_support import time_config

import toolweave as tw
from toolweave.execution import Hooks, PostToolUseDecision, PostToolUseInput
from toolweave.loop import HookSettings, build_shell_hooks
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.tools.mcp import open_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]

NOW = {"timezone": "UTC"}
TOOL = "mcp__time__get_current_time"


def _model(seen: list[tw.ToolResult]) -> ScriptedModel:
    def answer(request: ModelRequest) -> tw.ModelResponse:
        seen.extend(request.messages[-1].tool_results)
        return tw.ModelResponse([tw.Text("ok")])

    call = tw.ToolCall("t1", TOOL, NOW)
    return ScriptedModel(
        [tw.ModelResponse([call], stop_reason=tw.StopReason.TOOL_USE), answer]
    )


async def test_a_python_post_hook_replaces_an_mcp_tools_output() -> None:
    originals: list[str] = []
    hooks = Hooks()

    @hooks.post_tool_use("mcp__time__*")
    def redact(data: PostToolUseInput) -> PostToolUseDecision:
        originals.append(data.result.text)
        return PostToolUseDecision(replace_output="[time redacted]")

    seen: list[tw.ToolResult] = []
    async with open_mcp_servers([time_config()]) as toolset:
        agent = tw.Agent(
            _model(seen), toolset.tools, config=tw.AgentConfig(hooks=hooks)
        )
        result = await agent.run("what time is it?")
        await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    (original,) = originals
    assert json.loads(original)["timezone"] == "UTC"  # the server's real answer
    (shown,) = seen
    assert (shown.content, shown.is_error) == ("[time redacted]", False)
    (stored,) = result.messages[2].tool_results
    assert stored.content == "[time redacted]"


async def test_a_shell_post_hook_replaces_it_with_updated_mcp_tool_output(
    tmp_path: Path,
) -> None:
    script = tmp_path / "redact.sh"
    script.write_text(
        "#!/bin/sh\n"
        "cat > payload.json\n"
        'printf \'%s\' \'{"hookSpecificOutput": {"hookEventName": "PostToolUse",'
        ' "updatedMCPToolOutput": "[shell redacted]"}}\'\n'
    )
    script.chmod(0o755)
    settings = HookSettings.model_validate(
        {"PostToolUse": [{"matcher": "mcp__time__*", "command": str(script)}]}
    )
    hooks = build_shell_hooks(settings, cwd=tmp_path, session_id="s1")
    seen: list[tw.ToolResult] = []
    async with open_mcp_servers([time_config()]) as toolset:
        agent = tw.Agent(
            _model(seen), toolset.tools, config=tw.AgentConfig(hooks=hooks)
        )
        result = await agent.run("what time is it?")
        await agent.aclose()
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    (shown,) = seen
    assert shown.content == "[shell redacted]"
    payload = json.loads((tmp_path / "payload.json").read_text())
    assert payload["tool_name"] == TOOL
    assert json.loads(payload["tool_response"]["content"])["timezone"] == "UTC"
