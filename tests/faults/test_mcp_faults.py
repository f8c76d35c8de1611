"""Fault table: an MCP server that misbehaves, under a whole agent run (issue 24, item 6).

Each row runs a real `tw.Agent` (a `ScriptedModel`) with the tools of a real
stdio server (tests/tools/mcp/mcp_faulty_server.py, raw JSON-RPC lines). Turn 1
calls the misbehaving tool, turn 2 calls ``echo``, turn 3 answers. For each row
the table says what the first call returns, and whether the second reached the
same server process or a restarted one. Every row also checks: the run
completes, every call is answered in order, and each call reached the server
(its log, written before the server acts). The server logs its pid per call.

Rows whose call must end at once run with a 60 s call timeout under a 20 s
bound; rows of a server that does not answer run with a 1 s timeout.
Both backends (asyncio, trio), real clocks: these are real processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

import toolweave as tw
from toolweave._exceptions import MCPConnectionError
from toolweave.events import ToolResultReady
from toolweave.execution import Hooks, PreToolUseDecision, PreToolUseInput
from toolweave.models import ScriptedModel
from toolweave.tools.mcp import MCPServer, MCPServerConfig, open_mcp_servers

pytestmark = [pytest.mark.anyio, pytest.mark.mcp]

SERVER = Path(__file__).parents[1] / "tools" / "mcp" / "mcp_faulty_server.py"
BOUND = 20.0
LONG = 60.0
SHORT = 1.0

EFFECTS_UNKNOWN = "effects are unknown"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: the servers are real processes."""
    return str(request.param)


@dataclass(frozen=True)
class Row:
    fault: str
    tool: str
    says: tuple[str, ...]
    """What the first call's result contains."""
    failed: bool
    restarted: bool
    """The second call went to a new server process."""
    timeout: float = LONG
    server_args: tuple[str, ...] = ()
    exit_seen: bool = False
    """Turn 2 waits until the server's exit was noticed (else it races the exit)."""


TABLE = [
    Row(
        "bad bytes line, then the answer", "bad_bytes", ("bad_bytes: x",), False, False
    ),
    Row(
        "bad byte in the answer",
        "bad_byte_in_answer",
        ("bad\ufffdbyte: x",),
        False,
        False,
    ),
    Row(
        "a line that is not JSON, then the answer", "noise", ("noise: x",), False, False
    ),
    Row(
        "garbage instead of the answer",
        "garbage",
        ("timed out after 1 s",),
        True,
        False,
        timeout=SHORT,
    ),
    Row(
        "answer with a wrong id",
        "wrong_id",
        ("matches no request", EFFECTS_UNKNOWN, "restarted on the next call"),
        True,
        True,
    ),
    Row(
        "error with a null id",
        "null_id_error",
        ("matches no request", EFFECTS_UNKNOWN),
        True,
        True,
    ),
    Row(
        "result that is not an object",
        "non_object",
        ("not valid JSON-RPC", "result: Input should be an object", EFFECTS_UNKNOWN),
        True,
        False,
    ),
    Row(
        "result that is not a CallToolResult",
        "not_a_result",
        ("not a valid tool result", EFFECTS_UNKNOWN),
        True,
        False,
    ),
    Row(
        "one call hangs, the server answers pings",
        "stall",
        ("timed out after 1 s",),
        True,
        False,
        timeout=SHORT,
    ),
    Row(
        "the whole server hangs",
        "freeze",
        ("timed out after 1 s",),
        True,
        True,
        timeout=SHORT,
    ),
    Row(
        "crash mid-call",
        "crash",
        ("the stream from the server ended", EFFECTS_UNKNOWN),
        True,
        True,
    ),
    Row(
        "crash mid-call, a child keeps its stdout open",
        "crash_keep_stdout",
        ("timed out after 1 s",),
        True,
        True,
        timeout=SHORT,
    ),
    Row(
        "exits when idle after 1 call",
        "echo",
        ("echo: x",),
        False,
        True,
        server_args=("--exit-after", "1"),
        exit_seen=True,
    ),
]


def _received(log: Path) -> list[tuple[int, str]]:
    rows = []
    for line in log.read_text().splitlines() if log.exists() else ():
        if not line.startswith("child "):
            pid, tool, _ = line.split(" ", 2)
            rows.append((int(pid), tool))
    return rows


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Path]:
    """The server's call log; children a crash left behind are killed at the end."""
    path = tmp_path / "calls.log"
    yield path
    for line in path.read_text().splitlines() if path.exists() else ():
        if line.startswith("child "):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[1]), signal.SIGKILL)


def _config(log: Path, *args: str, **options: object) -> MCPServerConfig:
    return MCPServerConfig(
        name="f",
        command=sys.executable,
        args=(str(SERVER), str(log), *args),
        **options,  # type: ignore[arg-type]
    )


def _exit_seen(server: MCPServer) -> Hooks:
    """Hold the call ``next`` until `server`'s exit was noticed.

    A call sent in the moment between a server's last answer and its exit is
    told "effects unknown" (it was sent, never answered): true, but a race.
    """
    hooks = Hooks()

    @hooks.pre_tool_use("mcp__f__echo")
    async def wait(data: PreToolUseInput) -> PreToolUseDecision:
        if data.call.id == "next":
            with anyio.fail_after(BOUND):
                while server.ready:  # noqa: ASYNC110 - the state of another process
                    await anyio.sleep(0.01)
        return PreToolUseDecision()

    return hooks


def _turn(call_id: str, tool: str, text: str) -> tw.ModelResponse:
    call = tw.ToolCall(call_id, f"mcp__f__{tool}", {"text": text})
    return tw.ModelResponse([call], stop_reason=tw.StopReason.TOOL_USE)


async def _run(
    agent: tw.Agent,
) -> tuple[tw.events.RunFinished, dict[str, tw.ToolResult]]:
    results: dict[str, tw.ToolResult] = {}
    finished = None
    async for event in agent.run_stream("go"):
        if isinstance(event, ToolResultReady):
            results[event.result.call_id] = event.result
        finished = event
    assert isinstance(finished, tw.events.RunFinished)
    return finished, results


@pytest.mark.parametrize("row", TABLE, ids=[row.fault for row in TABLE])
async def test_mcp_fault(row: Row, log: Path, tmp_path: Path) -> None:
    config = _config(log, *row.server_args, timeout=row.timeout)
    script = [
        _turn("first", row.tool, "x"),
        _turn("next", "echo", "after"),
        tw.ModelResponse([tw.Text("done")]),
    ]
    async with open_mcp_servers([config]) as toolset:
        server = toolset.server("f")
        hooks = _exit_seen(server) if row.exit_seen else Hooks()
        agent = tw.Agent(
            ScriptedModel(script),
            toolset.tools,
            config=tw.AgentConfig(workspace=tmp_path, hooks=hooks),
        )
        with anyio.fail_after(BOUND):
            finished, results = await _run(agent)
        stats = server.statistics()

    assert finished.reason is tw.CompletionReason.COMPLETED
    assert list(results) == ["first", "next"]
    first, after = results["first"], results["next"]
    assert first.is_error is row.failed, first.text
    for words in row.says:
        assert words in first.text
    assert not after.is_error, after.text
    assert after.text == "echo: after"
    [(pid_first, tool_first), (pid_next, tool_next)] = _received(log)
    assert (tool_first, tool_next) == (row.tool, "echo")  # both reached a server
    assert (pid_first != pid_next) is row.restarted
    assert stats.starts == (2 if row.restarted else 1)


@pytest.mark.parametrize(
    ("mode", "startup_timeout", "says"),
    [
        ("exit", LONG, "the stream from the server ended"),
        ("wrong-id", LONG, "an answer whose id matches no request"),
        ("hang", SHORT, "no answer within 1s"),
        ("garbage", SHORT, "it wrote a line that is not JSON-RPC: not JSON: '<html>"),
    ],
)
async def test_mcp_fault_at_the_first_start(
    log: Path, mode: str, startup_timeout: float, says: str
) -> None:
    """The server set does not open; the error says what the server did."""
    config = _config(log, "--start", mode, startup_timeout=startup_timeout)
    with anyio.fail_after(BOUND), pytest.raises(MCPConnectionError) as info:
        async with open_mcp_servers([config]):
            pytest.fail("the block must not run")
    assert str(info.value).startswith("MCP server 'f' failed to start: ")
    assert says in str(info.value)


async def test_mcp_fault_at_a_restart(log: Path, tmp_path: Path) -> None:
    """The server exits after a call and will not start again: the run goes on."""
    refuse = tmp_path / "refuse"

    def refuse_restarts(request: tw.ModelRequest) -> tw.ModelResponse:
        refuse.touch()
        return _turn("next", "echo", "after")

    config = _config(log, "--exit-after", "1", "--refuse-if", str(refuse))
    script = [
        _turn("first", "echo", "x"),
        refuse_restarts,
        tw.ModelResponse([tw.Text("done")]),
    ]
    async with open_mcp_servers([config]) as toolset:
        hooks = _exit_seen(toolset.server("f"))
        agent = tw.Agent(
            ScriptedModel(script),
            toolset.tools,
            config=tw.AgentConfig(workspace=tmp_path, hooks=hooks),
        )
        with anyio.fail_after(BOUND):
            finished, results = await _run(agent)
    assert finished.reason is tw.CompletionReason.COMPLETED
    assert results["first"].text == "echo: x"
    assert results["next"].is_error
    assert "MCP server 'f' failed to start" in results["next"].text
    assert "No tool call was sent to it." in results["next"].text
    assert [tool for _, tool in _received(log)] == ["echo"]  # never reached: not run
