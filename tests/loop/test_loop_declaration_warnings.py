"""A tool whose declaration raises gives a Warning event; the call still fails closed."""

from __future__ import annotations

from typing import Any

import pytest
from loop_support import call, run_collect, say, scripted, use

from toolweave.events import Warning as WarningEvent
from toolweave.loop import Agent
from toolweave.tools import Concurrency, tool

pytestmark = pytest.mark.anyio


def _broken(args: dict[str, Any]) -> Any:
    raise ValueError("no such key")


@tool(concurrency=Concurrency.SAFE, access=_broken)
async def lookup(n: int) -> str:
    """Looks something up."""
    return f"found {n}"


async def test_a_raising_access_declaration_is_a_warning_and_the_call_still_runs() -> (
    None
):
    agent = Agent(
        scripted(use(call("a", "lookup", n=1), call("b", "lookup", n=2)), say("done")),
        [lookup],
    )
    result, events = await run_collect(agent)
    assert result.output == "done"
    warnings = [
        e.message
        for e in events
        if isinstance(e, WarningEvent) and e.message.startswith("tool ")
    ]
    assert warnings == [
        "tool 'lookup': its access declaration failed (it raised ValueError: no such"
        " key); the call is treated as a barrier"
    ]
