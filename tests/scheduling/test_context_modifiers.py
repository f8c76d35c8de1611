"""Context modifiers are serial-equivalent (issue 13, item 4).

A context change returned by a call is applied before any later call the policy
orders after it, so the same `[enable, check]` batch gives the same answers
serially and in parallel, under every policy — through the real lifecycle.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolweave as tw
from toolweave.execution import ToolOutput, ToolRunner
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools import SessionState

pytestmark = pytest.mark.anyio

POLICIES = ["all_or_nothing", "partition", "rwlock", "conflict"]


def _tools(mode: dict[str, int], declared: bool) -> tw.ToolRegistry:
    writes = (lambda a: tw.Access(writes=["ctx:mode"])) if declared else None

    @tw.tool(access=writes)  # SEQUENTIAL: it changes shared context (DESIGN)
    async def enable(level: int) -> ToolOutput:
        """The enable test tool."""
        await anyio.lowlevel.checkpoint()
        return ToolOutput(
            f"set {level}", context_modifier=lambda: mode.update(level=level)
        )

    @tw.tool(
        concurrency=tw.Concurrency.SAFE,
        access=lambda a: tw.Access(reads=["ctx:mode"]),
    )
    async def check(tag: str) -> str:
        """The check test tool."""
        for _ in range(3):  # let a concurrent modifier land if it could
            await anyio.lowlevel.checkpoint()
        return f"{tag}: level {mode['level']}"

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
    async def other(tag: str) -> str:
        """The other test tool."""
        await anyio.lowlevel.checkpoint()
        return tag

    return tw.ToolRegistry([enable, check, other])


async def _run(
    batch: list[tw.ToolCall], config: ConcurrencyConfig, declared: bool, tmp: Path
) -> tuple[list[tw.ToolResult], dict[str, int]]:
    mode = {"level": 0}
    registry = _tools(mode, declared)
    runner = ToolRunner(registry, state=SessionState(workspace=tmp))
    results = await Dispatcher(config).dispatch(batch, registry, runner)
    return results, mode


def _call(i: int, name: str, **args: Any) -> tw.ToolCall:
    return tw.ToolCall("dup", name, args)  # one id for all: results go by position


BATCHES = {
    "enable-check": [("enable", {"level": 1}), ("check", {"tag": "after"})],
    "check-enable-check": [
        ("check", {"tag": "before"}),
        ("enable", {"level": 2}),
        ("check", {"tag": "after"}),
    ],
    "two-enables": [
        ("enable", {"level": 1}),
        ("other", {"tag": "x"}),
        ("check", {"tag": "mid"}),
        ("enable", {"level": 3}),
        ("check", {"tag": "end"}),
    ],
}


@pytest.mark.parametrize(
    ("policy", "declared", "shape"),
    list(itertools.product(POLICIES, [False, True], sorted(BATCHES))),
)
async def test_enable_then_check_answers_the_same_serially_and_in_parallel(
    tmp_path: Path, policy: str, declared: bool, shape: str
) -> None:
    batch = [_call(i, name, **args) for i, (name, args) in enumerate(BATCHES[shape])]
    serial, serial_mode = await _run(
        batch, ConcurrencyConfig(enabled=False), declared, tmp_path
    )
    parallel, parallel_mode = await _run(
        batch,
        ConcurrencyConfig(policy=policy, max_concurrency=4),  # type: ignore[arg-type]
        declared,
        tmp_path,
    )
    assert [r.text for r in parallel] == [r.text for r in serial]
    assert parallel_mode == serial_mode
    checks = [r.text for r in serial if ": level" in r.text]
    assert any(not t.endswith("level 0") for t in checks)  # the change was seen
