"""Who vouches for each kind of tool's SAFE claim (`Tool.warrant`), fixed per tool.

The early-start rule reads only this property (`scheduling.starts_early`), so each
source of tools must set it: yours are USER, toolweave's readers ENFORCED, claims
relayed from someone else UNVOUCHED (or AUDITED where the declaration audit can
enforce them). MCP servers and manifests are covered with real ones in
tests/faults and tests/tools/manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import toolweave as tw
from toolweave.cluster._tools import RayTool
from toolweave.models import ScriptedModel
from toolweave.tools import SandboxMode, Warrant, WrappedTool
from toolweave.tools.builtin import BashTool


@tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda args: tw.Access())
async def mine(x: int) -> int:
    """Yours."""
    return x


def _safe(name: str, warrant: Warrant) -> tw.Tool:
    return WrappedTool(mine, name=name, warrant=warrant)


def test_your_tools_are_yours() -> None:
    assert mine.warrant is Warrant.USER


def test_the_builtin_readers_enforce_their_claim(tmp_path: Path) -> None:
    tools = {t.name: t for t in tw.tools.coding_tools(tmp_path)}
    for name in ("read", "glob", "grep", "todo_read"):
        assert tools[name].warrant is Warrant.ENFORCED, name
    # a GET changes nothing only on the web server's word
    assert tools["web_fetch"].warrant is Warrant.UNVOUCHED


def test_bash_is_enforced_only_where_a_sandbox_backend_confines_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    confined = BashTool(tmp_path)
    has_backend = confined.sandbox.backend_for(SandboxMode.READ_ONLY) is not None
    assert confined.warrant is (Warrant.ENFORCED if has_backend else Warrant.UNVOUCHED)
    bare = BashTool(tmp_path)
    monkeypatch.setattr(bare.sandbox, "backend_for", lambda mode: None)
    assert bare.warrant is Warrant.UNVOUCHED  # the classifier's word alone


def test_a_wrapped_tool_keeps_its_inner_claim_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    [read] = [t for t in tw.tools.coding_tools(tmp_path) if t.name == "read"]
    assert WrappedTool(read).warrant is Warrant.ENFORCED
    assert WrappedTool(read, warrant=Warrant.UNVOUCHED).warrant is Warrant.UNVOUCHED


def test_a_ray_worker_is_out_of_reach_of_what_toolweave_enforces(
    tmp_path: Path,
) -> None:
    [read] = [t for t in tw.tools.coding_tools(tmp_path) if t.name == "read"]
    assert RayTool(mine).warrant is Warrant.USER
    assert RayTool(read).warrant is Warrant.UNVOUCHED
    assert RayTool(_safe("audited", Warrant.AUDITED)).warrant is Warrant.UNVOUCHED


@pytest.mark.parametrize(
    ("children", "audit", "expected"),
    [
        ([Warrant.USER, Warrant.ENFORCED], "off", Warrant.USER),
        ([Warrant.USER, Warrant.UNVOUCHED], "off", Warrant.UNVOUCHED),
        ([Warrant.AUDITED], "off", Warrant.AUDITED),  # the parent's audit decides
        ([Warrant.AUDITED], "enforce", Warrant.USER),
        ([Warrant.AUDITED], "warn", Warrant.UNVOUCHED),
        ([], "off", Warrant.USER),
    ],
)
def test_a_sub_agent_is_as_vouched_as_its_least_vouched_tool(
    children: list[Warrant], audit: Any, expected: Warrant
) -> None:
    tools = [_safe(f"t{i}", w) for i, w in enumerate(children)]
    child = tw.loop.subagent(
        "helper",
        "helps",
        model=ScriptedModel([]),
        tools=tools,
        config=tw.AgentConfig(audit=audit),
    )
    assert child.warrant is expected
