"""A real stdio server that misbehaves on the wire: what each call returns, what the next does.

The server (mcp_faulty_server.py) writes raw JSON-RPC lines, so it can write
what an SDK server never would. It logs every call it receives before acting
on it, with its pid: the proof that a call reached it, and whether the call
after a fault went to the same process or to a restarted one.

Calls that must end at once are bounded well under their configured timeout
(`PROMPT` < `LONG`): one that waited for its timeout fails the test.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import anyio
import pytest
from mcp_support import (
    FAULTY_SERVER,
    child_pids,
    faulty_config,
    lifecycle,
    logged_children,
    received,
    wait_until,
)

import toolweave as tw
from toolweave._exceptions import MCPConnectionError, ToolError, ToolTimeoutError
from toolweave.scheduling import Dispatcher
from toolweave.tools.mcp import MCPServerConfig, MCPToolset, open_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]

LONG = 60.0
"""A call timeout no prompt answer comes near."""
PROMPT = 20.0
"""Bound on a call that must end at once (well under LONG)."""
SHORT = 1.0
"""The call timeout of the rows that test a server that does not answer."""


def _call(tool: str, text: str = "x", call_id: str = "c0") -> tw.ToolCall:
    return tw.ToolCall(call_id, f"mcp__f__{tool}", {"text": text})


async def _dispatch(
    toolset: MCPToolset, tmp_path: Path, *calls: tw.ToolCall
) -> list[tw.ToolResult]:
    registry = tw.ToolRegistry(toolset.tools)
    runner, _ = lifecycle(registry, tmp_path)
    return await Dispatcher().dispatch(list(calls), registry, runner)


def _pids(log: Path) -> list[int]:
    return [pid for pid, _, _ in received(log)]


async def test_a_line_of_bad_bytes_is_skipped_and_this_call_and_the_next_succeed(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=LONG)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            first = await _dispatch(toolset, tmp_path, _call("bad_bytes"))
            second = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()
    assert [r.text for r in first + second] == ["bad_bytes: x", "echo: after"]
    assert stats.stray_lines == 1
    assert (stats.starts, stats.disconnects) == (1, 0)
    assert len(set(_pids(log))) == 1


async def test_a_bad_byte_inside_an_answer_arrives_as_a_replacement_character(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=LONG)]) as toolset:
        with anyio.fail_after(PROMPT):
            [result] = await _dispatch(toolset, tmp_path, _call("bad_byte_in_answer"))
    assert not result.is_error
    assert result.text == "bad\ufffdbyte: x"


# Ids 1 and 2 are the handshake, 3 the stall, 4 the faulty call (answered as 1004).
@pytest.mark.parametrize(
    ("tool", "shown"),
    [("wrong_id", "(id 1004)"), ("null_id_error", "(id null, error -32700 '?')")],
)
async def test_an_answer_to_no_request_ends_every_call_in_flight_at_once(
    tmp_path: Path, tool: str, shown: str
) -> None:
    """One call waits unanswered; the server's stray answer ends it and itself."""
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=LONG)]) as toolset:
        server = toolset.server("f")
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        results: dict[str, tw.ToolResult] = {}

        async def run(call: tw.ToolCall) -> None:
            results[call.id] = await runner(call)

        with anyio.fail_after(PROMPT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, _call("stall", call_id="waiting"))
                await wait_until(lambda: len(received(log)) == 1, "the stall")
                tg.start_soon(run, _call(tool, call_id="faulty"))
            after = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()

    for call_id in ("waiting", "faulty"):
        result = results[call_id]
        assert result.is_error
        assert "answer whose id matches no request awaiting one" in result.text
        assert shown in result.text
        assert "The request had been sent, so the call's effects are unknown" in (
            result.text
        )
        assert "restarted on the next call" in result.text
    assert after[0].text == "echo: after"
    assert (stats.starts, stats.disconnects) == (2, 1)
    first, second, third = _pids(log)
    assert first == second != third  # both calls reached the first process


async def test_a_handshake_answer_to_no_request_fails_the_start_at_once(
    tmp_path: Path,
) -> None:
    config = faulty_config(tmp_path / "calls.log", "--start", "wrong-id")
    assert config.startup_timeout == 60  # the default, which it must not wait out
    with anyio.fail_after(PROMPT), pytest.raises(MCPConnectionError) as info:
        async with open_mcp_servers([config]):
            pytest.fail("the block must not run")
    assert "MCP server 'f' failed to start: it sent an answer whose id matches" in str(
        info.value
    )
    assert child_pids(str(FAULTY_SERVER)) == []


@pytest.mark.parametrize(
    ("tool", "why"),
    [
        ("non_object", "not valid JSON-RPC (result: Input should be an object)"),
        ("not_a_result", "not a valid tool result (content: Input should be a valid"),
    ],
)
async def test_an_answer_that_is_not_a_result_ends_its_call_at_once_and_keeps_the_server(
    tmp_path: Path, tool: str, why: str
) -> None:
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=LONG)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            [result] = await _dispatch(toolset, tmp_path, _call(tool))
            [after] = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()
    assert result.is_error
    assert why in result.text
    assert "The request reached the server, so the call's effects are unknown" in (
        result.text
    )
    assert after.text == "echo: after"
    assert (stats.starts, stats.disconnects) == (1, 0)
    assert len(set(_pids(log))) == 1


async def test_noise_is_ignored_and_garbage_instead_of_an_answer_ends_at_the_timeout(
    tmp_path: Path,
) -> None:
    """A line that names no call cannot end one: its call waits for its timeout."""
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=SHORT)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            [noise] = await _dispatch(toolset, tmp_path, _call("noise"))
            [garbage] = await _dispatch(toolset, tmp_path, _call("garbage"))
            [after] = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()
    assert noise.text == "noise: x"
    assert garbage.is_error
    assert "timed out after 1 s" in garbage.text
    assert after.text == "echo: after"  # the server answered the ping: kept
    assert stats.stray_lines == 2
    assert (stats.starts, stats.disconnects) == (1, 0)


async def test_a_stalled_call_times_out_and_the_server_that_still_answers_is_kept(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=SHORT)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            [through_runner] = await _dispatch(toolset, tmp_path, _call("stall"))
            with pytest.raises(ToolTimeoutError) as direct:  # the SDK's own timeout
                await server.call_tool("stall", {"text": "direct"})
            [after] = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()
    assert through_runner.is_error
    assert "timed out after 1 s" in through_runner.text
    assert "did not answer in time" in str(direct.value)
    assert "The request was sent, so the call's effects are unknown" in str(
        direct.value
    )
    assert after.text == "echo: after"
    assert (stats.starts, stats.disconnects) == (1, 0)
    assert len(set(_pids(log))) == 1


async def test_a_frozen_server_times_out_and_the_next_call_restarts_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=SHORT)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            [frozen] = await _dispatch(toolset, tmp_path, _call("freeze"))
            assert not server.ready  # under a ping probe: not trusted with a call
            [after] = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()
        first, second = _pids(log)
        await wait_until(
            lambda: child_pids(str(FAULTY_SERVER)) == [second], "the frozen one gone"
        )
    assert frozen.is_error
    assert "timed out after 1 s" in frozen.text
    assert after.text == "echo: after"
    assert first != second
    assert (stats.starts, stats.disconnects) == (2, 1)


async def test_a_crash_mid_call_ends_it_at_once_and_the_next_call_restarts(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=LONG)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            [crashed] = await _dispatch(toolset, tmp_path, _call("crash"))
            [after] = await _dispatch(toolset, tmp_path, _call("echo", "after"))
        stats = server.statistics()
    assert crashed.is_error
    assert "the stream from the server ended" in crashed.text
    assert "The request had been sent, so the call's effects are unknown" in (
        crashed.text
    )
    assert after.text == "echo: after"
    first, second = _pids(log)
    assert first != second
    assert (stats.starts, stats.disconnects) == (2, 1)


async def test_a_crash_that_leaves_its_output_open_times_out_then_restarts(
    tmp_path: Path,
) -> None:
    """Its child holds stdout: no end of stream, so the call ends at its timeout."""
    log = tmp_path / "calls.log"
    try:
        async with open_mcp_servers([faulty_config(log, timeout=SHORT)]) as toolset:
            server = toolset.server("f")
            with anyio.fail_after(PROMPT):
                [crashed] = await _dispatch(
                    toolset, tmp_path, _call("crash_keep_stdout")
                )
                [after] = await _dispatch(toolset, tmp_path, _call("echo", "after"))
            stats = server.statistics()
    finally:
        for pid in logged_children(log):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert crashed.is_error
    assert "timed out after 1 s" in crashed.text
    assert after.text == "echo: after"
    first, second = _pids(log)
    assert first != second
    assert (stats.starts, stats.disconnects) == (2, 1)


async def test_a_server_that_exits_after_its_calls_is_restarted_by_the_next(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    config = faulty_config(log, "--exit-after", "2", timeout=LONG)
    async with open_mcp_servers([config]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            results = await _dispatch(toolset, tmp_path, _call("echo", "1"))
            results += await _dispatch(toolset, tmp_path, _call("echo", "2"))
            await wait_until(lambda: not server.ready, "the exit to be noticed")
            results += await _dispatch(toolset, tmp_path, _call("echo", "3"))
        stats = server.statistics()
    assert [r.text for r in results] == ["echo: 1", "echo: 2", "echo: 3"]
    first, second, third = _pids(log)
    assert first == second != third
    assert (stats.starts, stats.disconnects) == (2, 1)


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("exit", "the stream from the server ended (it exited, or closed its output)"),
        ("hang", "no answer within 1s"),
        (
            "garbage",
            "no answer within 1s (it wrote a line that is not JSON-RPC: not JSON:"
            " '<html>not an MCP server</html>')",
        ),
    ],
)
async def test_a_server_that_fails_its_start_says_how(
    tmp_path: Path, mode: str, why: str
) -> None:
    config = faulty_config(
        tmp_path / "calls.log", "--start", mode, startup_timeout=SHORT
    )
    with anyio.fail_after(PROMPT), pytest.raises(MCPConnectionError) as info:
        async with open_mcp_servers([config]):
            pytest.fail("the block must not run")
    assert str(info.value) == (
        f"MCP server 'f' failed to start: {why}. No tool call was sent to it."
    )
    assert child_pids(str(FAULTY_SERVER)) == []


async def test_one_bad_server_does_not_touch_its_neighbour(tmp_path: Path) -> None:
    bad, good = tmp_path / "bad.log", tmp_path / "good.log"
    configs: list[MCPServerConfig] = [
        faulty_config(bad, timeout=LONG),
        faulty_config(good, name="g", timeout=LONG),
    ]
    async with open_mcp_servers(configs) as toolset:
        with anyio.fail_after(PROMPT):
            results = await _dispatch(
                toolset,
                tmp_path,
                _call("wrong_id"),
                tw.ToolCall("c1", "mcp__g__echo", {"text": "fine"}),
            )
        assert toolset.server("g").statistics().disconnects == 0
    assert results[0].is_error
    assert results[1].text == "echo: fine"


async def test_a_call_error_is_a_tool_error_for_direct_callers(tmp_path: Path) -> None:
    """`MCPServer.call_tool` raises what the lifecycle turns into the results above."""
    log = tmp_path / "calls.log"
    async with open_mcp_servers([faulty_config(log, timeout=LONG)]) as toolset:
        server = toolset.server("f")
        with anyio.fail_after(PROMPT):
            with pytest.raises(MCPConnectionError, match="effects are unknown"):
                await server.call_tool("crash", {"text": "x"})
            with pytest.raises(ToolError, match="not valid JSON-RPC"):
                await server.call_tool("non_object", {"text": "x"})
            result = await server.call_tool("echo", {"text": "x"})
    assert not result.is_error
