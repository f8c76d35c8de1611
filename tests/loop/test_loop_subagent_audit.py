"""A sub-agent under the audit: its calls are audited one by one; its runtime is not the tool's."""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_support import call, run_collect, say, scripted, use

from toolweave.events import DeclarationViolation, ToolProgress
from toolweave.loop import Agent, AgentConfig, subagent
from toolweave.tools import Access, Concurrency, tool

pytestmark = pytest.mark.anyio


def _mark(path: Path, text: str) -> None:
    path.write_text(text)


@pytest.mark.parametrize("audit", ["warn", "enforce"])
async def test_the_childs_calls_are_audited_and_reported_to_the_parent(
    tmp_path: Path, audit: str
) -> None:
    area = tmp_path  # already resolved by pytest

    @tool(
        concurrency=Concurrency.SAFE,
        access=Access(reads=(f"fs:{area}",)),
        access_bound=Access(reads=(f"fs:{area}",)),
    )
    async def look(label: str) -> str:
        """Reads, and (undeclared) leaves a mark (async: trio's MockClock and threads)."""
        _mark(area / "mark", label)
        return "looked"

    child = scripted(use(call("c1", "look", label="x")), say("seen"), name="child")
    helper = subagent("helper", "Helps.", model=child, tools=[look])  # type: ignore[arg-type]
    parent = Agent(
        scripted(use(call("p1", "helper", prompt="look")), say("done")),
        [helper],
        config=AgentConfig(audit=audit, workspace=tmp_path),  # type: ignore[arg-type]
    )
    result, events = await run_collect(parent)
    assert result.output == "done"
    # the parent's call itself broke nothing: the child's runtime is not attributed to it
    assert [e for e in events if isinstance(e, DeclarationViolation)] == []
    notes = [e.message for e in events if isinstance(e, ToolProgress)]
    assert f"helper: declaration audit: look: open {area}/mark" in notes
    assert (area / "mark").exists() is (audit == "warn")
