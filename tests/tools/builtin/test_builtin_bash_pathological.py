"""Inputs that hang or explode naive parsers: the classifier always ends, never blocks.

Every input here returns a verdict within 1 s whether it is classified on the
loop (as the gate does, bounded by the parse deadline and size cap) or off it
(`read_only_verdict_async`); while an off-loop classification is in progress,
a heartbeat task on the same loop ticks N times (a rendezvous: the worker does
not finish until it has seen the ticks, so a parse holding the loop would make
the rendezvous time out). Through `tw.Agent` with the real bash tool every
input ends the run normally.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

import toolweave as tw
from toolweave.execution import PermissionRules
from toolweave.models import ScriptedModel
from toolweave.tools.builtin import coding_tools
from toolweave.tools.builtin.bash import _classifier as _bash_classifier
from toolweave.tools.builtin.bash import _parse as _bash_parse
from toolweave.tools.builtin.bash._classifier import (
    read_only_verdict,
    read_only_verdict_async,
)
from toolweave.tools.builtin.bash._rules import command_parts

DEPTH = 10_000

PATHOLOGICAL = {
    "unterminated double quote": 'grep "abc',
    "unterminated single quote": "grep 'abc",
    "unterminated substitution": "echo $(ls",
    "unterminated backtick": "echo `ls",
    "unterminated parameter": "echo ${HOME",
    "unterminated heredoc": "cat <<EOF\nline",
    "unterminated if": "if true; then ls",
    "quoted ${ glued to text": 'grep "\\${HOME}x" f',
    "quoted ${ glued, no escape": 'grep "${HOME}x"y f',
    "many quoted ${": '"${' * 20_000,
    "1 MB command": "echo " + "a" * 1_000_000,
    "1 MB of words": "echo " + "a " * 500_000,
    "64 KiB of stacked heredocs": "<<E\n" * 16_000,
    "deep $(": "$(" * DEPTH + "ls" + ")" * DEPTH,
    "deep (": "(" * DEPTH + "ls" + ")" * DEPTH,
    "deep {": "{ " * DEPTH + "ls; " + "}; " * DEPTH,
    "deep backticks": "echo " + "`" * DEPTH,
    "deep quotes in substitutions": '"$(echo "' * DEPTH,
    "deep arithmetic": "echo $((" + "(" * DEPTH + "1" + ")" * DEPTH + "))",
    "deep [[": "[[ " + "( " * DEPTH + "a" + " )" * DEPTH + " ]]",
    "long && chain": " && ".join(["ls"] * 8_000),
    "NUL byte": "ls\x00rm x",
    "only NULs": "\x00" * 1000,
    "non-UTF-8 surrogate": "ls \udcff",
    "non-UTF-8 surrogates everywhere": "\udc80" * 10_000,
    "control characters": "ls \x01\x02\x1b[31m",
    "backslash-newline storm": "ls \\\n" * 10_000,
    "many heredocs with bodies": "cat <<A <<B <<C\n" * 3_000,
}


READ_ONLY_AMONG_THEM = {
    "quoted ${ glued to text",
    "quoted ${ glued, no escape",
    "control characters",
}
"""Pathological for a parser, yet plainly read-only: the verdict must say so."""

WITHIN_BUDGET_OR_EXCLUSIVE = {"deep {", "long && chain"}
"""Read-only if checked within the parse+walk budget (150 ms), exclusive if the
machine is too slow for that: either verdict is right, a hang is not."""


def _expected(name: str, read_only: bool) -> bool:
    if name in WITHIN_BUDGET_OR_EXCLUSIVE:
        return True
    return read_only is (name in READ_ONLY_AMONG_THEM)


@pytest.mark.parametrize("name", PATHOLOGICAL)
@pytest.mark.anyio
async def test_on_the_loop_each_returns_within_seconds(name: str) -> None:
    command = PATHOLOGICAL[name]
    _bash_parse.parse_script.cache_clear()
    # The bound is on the work done on the loop's thread (CPU time), so a
    # machine shared with other jobs cannot fail it; the wall-clock guard
    # only catches a hang.
    with anyio.fail_after(10):
        started = time.thread_time()
        verdict = read_only_verdict(command)
        command_parts(command)
        spent = time.thread_time() - started
        # the deadline fires at this checkpoint if the calls overran it
        await anyio.lowlevel.checkpoint()
    # About 0.2 s each on a quiet machine; a blow-up (exponential parsing) is
    # seconds to minutes. CPU time still inflates under heavy contention (1.15 s
    # seen on a loaded 2-core machine), so the bound leaves room for that.
    assert spent < 3, f"{spent:.2f} s of CPU on the loop's thread"
    assert _expected(name, verdict.read_only)
    assert bool(verdict.reason) is not verdict.read_only


@pytest.mark.parametrize("name", PATHOLOGICAL)
@pytest.mark.anyio
async def test_off_the_loop_a_heartbeat_keeps_ticking(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = PATHOLOGICAL[name]
    ticks_needed = 5
    ticked = threading.Event()
    real_parse = _bash_parse.parse_script

    def parse_after_ticks(text: str) -> object:
        # The worker is inside the classification: it waits for the heartbeat.
        assert ticked.wait(5), "the heartbeat stopped while classification ran"
        return real_parse(text)

    monkeypatch.setattr(_bash_classifier, "parse_script", parse_after_ticks)
    real_parse.cache_clear()
    count = 0
    done = anyio.Event()

    async def heartbeat() -> None:
        nonlocal count
        while not done.is_set():
            count += 1
            if count >= ticks_needed:
                ticked.set()
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        with anyio.fail_after(6):
            verdict = await read_only_verdict_async(command)
        done.set()
    assert count >= ticks_needed
    assert _expected(name, verdict.read_only)


def test_a_cancelled_parse_leaves_the_parser_usable() -> None:
    _bash_parse.parse_script.cache_clear()
    slow = _bash_parse.parse_script("<<E\n" * 16_000)
    assert isinstance(slow, _bash_parse.Unparsed)
    assert "longer than" in slow.reason
    assert read_only_verdict("ls -la").read_only


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the bash tool waits on real processes."""
    return str(request.param)


@pytest.mark.anyio
async def test_through_the_agent_every_input_ends_the_run_normally(
    tmp_path: Path,
) -> None:
    """One turn per input (a failed bash call would cancel its bash siblings).

    Each input starts with ``rm -f keep``: a deny rule on ``rm`` must stop every
    one of them, parseable or not, and the run must end as COMPLETED.
    """
    (tmp_path / "keep").write_text("keep")
    calls = [
        tw.ToolCall(f"c{i}", "bash", {"command": f"rm -f keep; {text}"})
        for i, text in enumerate(PATHOLOGICAL.values())
    ]
    turns = [tw.ModelResponse([c], stop_reason=tw.StopReason.TOOL_USE) for c in calls]
    model = ScriptedModel([*turns, tw.ModelResponse([tw.Text("done")])])
    config = tw.AgentConfig(
        permissions=PermissionRules(deny=["bash(rm:*)"]),
        workspace=tmp_path,
        max_iterations=len(calls) + 1,
        stall_limit=len(calls) + 1,
        repeat_failure_limit=None,
    )
    agent = tw.Agent(model, coding_tools(tmp_path), config=config)
    with anyio.fail_after(60):
        result = await agent.run("go")
    assert result.completion_reason is tw.CompletionReason.COMPLETED
    assert result.output == "done"
    results = [
        block
        for message in result.messages
        if not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, tw.ToolResult)
    ]
    assert [r.call_id for r in results] == [c.id for c in calls]
    for name, r in zip(PATHOLOGICAL, results, strict=True):
        assert r.is_error
        if name.startswith("non-UTF-8"):  # the input schema refuses it first
            assert "Invalid input for tool 'bash'" in r.text
        else:
            assert "denied by rule bash(rm:*)" in r.text, name
    assert (tmp_path / "keep").read_text() == "keep"


def test_the_walk_is_bounded_by_a_node_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bash_parse, "MAX_NODES", 100)
    _bash_parse.parse_script.cache_clear()
    try:
        verdict = read_only_verdict("; ".join(["ls"] * 200))
    finally:
        _bash_parse.parse_script.cache_clear()
    assert not verdict.read_only
    assert "too complex" in verdict.reason
