"""Servers that die, restart, or will not start; readiness outside the slots."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest
from mcp_support import (
    Recorder,
    child_pids,
    lifecycle,
    own_server_config,
    time_config,
    wait_until,
)

import toolweave as tw
from toolweave._exceptions import MCPConnectionError
from toolweave.scheduling import ConcurrencyConfig, Dispatcher
from toolweave.tools.mcp import MCPServerConfig, open_mcp_servers
from toolweave.tools.mcp._server import RETRY_INTERVAL

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]

NOW = {"timezone": "UTC"}
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


def _only_pid(needle: str) -> int:
    [pid] = child_pids(needle)
    return pid


async def test_a_server_killed_mid_call_gives_an_error_result_then_restarts(
    tmp_path: Path,
) -> None:
    async with open_mcp_servers([time_config()]) as toolset:
        server = toolset.server("time")
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        first_pid = _only_pid("mcp-server-time")
        results: list[tw.ToolResult] = []

        async def dispatch_one() -> None:
            call = tw.ToolCall("c0", "mcp__time__get_current_time", NOW)
            results.extend(await Dispatcher().dispatch([call], registry, runner))

        os.kill(first_pid, signal.SIGSTOP)  # it can take the request, not answer it
        async with anyio.create_task_group() as tg:
            tg.start_soon(dispatch_one)
            await wait_until(
                lambda: server.statistics().calls_in_flight == 1, "the call"
            )
            os.kill(first_pid, signal.SIGKILL)

        [died] = results
        assert died.is_error
        assert "restarted on the next call" in died.text
        assert not server.ready
        assert all(tool.needs_prepare for tool in toolset.tools)
        assert server.statistics().disconnects == 1

        # A parallel batch: the Dispatcher's readiness step restarts the server.
        calls = [
            tw.ToolCall("c1", "mcp__time__get_current_time", NOW),
            tw.ToolCall("c2", "mcp__time__convert_time", CONVERT),
        ]
        again = await Dispatcher().dispatch(calls, registry, runner)
        assert [r.is_error for r in again] == [False, False], again
        assert '"timezone": "Asia/Tokyo"' in again[1].text
        assert server.statistics().starts == 2
        assert _only_pid("mcp-server-time") != first_pid


async def test_a_server_that_dies_while_idle_is_noticed_and_restarted(
    tmp_path: Path,
) -> None:
    async with open_mcp_servers([time_config()]) as toolset:
        server = toolset.server("time")
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        os.kill(_only_pid("mcp-server-time"), signal.SIGKILL)
        await wait_until(lambda: not server.ready, "the death to be noticed")
        assert server.statistics().disconnects == 1
        # One call takes the sequential path (no readiness step): the call connects.
        call = tw.ToolCall("c0", "mcp__time__get_current_time", NOW)
        [result] = await Dispatcher().dispatch([call], registry, runner)
        assert not result.is_error, result
        assert server.statistics().starts == 2


async def test_readiness_waits_outside_the_slots(tmp_path: Path) -> None:
    """With one slot held by another call, a dead server is still restarted."""
    release = anyio.Event()

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda args: tw.Access())
    async def hold() -> str:
        """The hold test tool."""
        await release.wait()
        return "held"

    async with open_mcp_servers([time_config()]) as toolset:
        server = toolset.server("time")
        registry = tw.ToolRegistry([hold, *toolset.tools])
        runner, _ = lifecycle(registry, tmp_path)
        recorder = Recorder(runner)
        os.kill(_only_pid("mcp-server-time"), signal.SIGKILL)
        await wait_until(lambda: not server.ready, "the death to be noticed")
        calls = [
            tw.ToolCall("c0", "hold", {}),
            tw.ToolCall("c1", "mcp__time__get_current_time", NOW),
        ]
        dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=1))
        results: list[tw.ToolResult] = []

        async def dispatch() -> None:
            results.extend(await dispatcher.dispatch(calls, registry, recorder))

        async with anyio.create_task_group() as tg:
            tg.start_soon(dispatch)
            await wait_until(lambda: server.ready, "the restart")
            # The server came up while `hold` kept the only slot.
            assert recorder.running == {"c0"}
            assert dispatcher.statistics().slots_in_use == 1
            release.set()
        assert results[0].text == "held"
        assert not results[1].is_error, results[1]


async def test_a_server_that_cannot_restart_fails_its_calls_then_recovers(
    tmp_path: Path,
) -> None:
    refuse = tmp_path / "refuse"
    async with open_mcp_servers([own_server_config(refuse_if=refuse)]) as toolset:
        server = toolset.server("t")
        registry = tw.ToolRegistry(toolset.tools)
        runner, _ = lifecycle(registry, tmp_path)
        refuse.touch()
        os.kill(_only_pid("mcp_test_server.py"), signal.SIGKILL)
        await wait_until(lambda: not server.ready, "the death to be noticed")
        calls = [tw.ToolCall(f"c{i}", "mcp__t__list_notes", {}) for i in range(3)]
        failed = await Dispatcher().dispatch(calls, registry, runner)
        assert [r.is_error for r in failed] == [True] * 3
        assert all("MCP server 't' failed to start" in r.text for r in failed)
        assert server.statistics().start_failures == 1  # one attempt for the batch

        refuse.unlink()
        await anyio.sleep(RETRY_INTERVAL)  # a failed start is not retried sooner
        recovered = await Dispatcher().dispatch(calls, registry, runner)
        assert [r.is_error for r in recovered] == [False] * 3, recovered
        assert server.statistics().starts == 2


async def test_a_server_that_does_not_start_fails_the_whole_set(tmp_path: Path) -> None:
    configs = [
        time_config(),
        MCPServerConfig(name="ghost", command=str(tmp_path / "no-such-server")),
    ]
    with pytest.raises(MCPConnectionError) as info:
        async with open_mcp_servers(configs):
            pytest.fail("the block must not run")
    assert "MCP server 'ghost' failed to start: FileNotFoundError" in str(info.value)
    assert child_pids("mcp-server-time") == []  # the other server was shut down


async def test_errors_in_the_block_propagate_unchanged_and_close_the_servers() -> None:
    with pytest.raises(KeyError, match="boom"):
        async with open_mcp_servers([time_config()]):
            raise KeyError("boom")
    assert child_pids("mcp-server-time") == []
