"""Helpers for the MCP tests: server configs, an instrumented runner, process lookup."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process

import toolweave as tw
from toolweave.events import Event, ToolRunning
from toolweave.execution import ToolRunner
from toolweave.tools import SessionState
from toolweave.tools.mcp import MCPServerConfig

BIN = Path(sys.executable).parent
TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")
FAULTY_SERVER = Path(__file__).with_name("mcp_faulty_server.py")
RENDEZVOUS_TIMEOUT = 30


def time_config(**options: object) -> MCPServerConfig:
    return MCPServerConfig(
        name="time",
        command=str(BIN / "mcp-server-time"),
        args=("--local-timezone", "UTC"),
        **options,  # type: ignore[arg-type]
    )


def git_config(repo: Path, name: str = "git", **options: object) -> MCPServerConfig:
    return MCPServerConfig(
        name=name,
        command=str(BIN / "mcp-server-git"),
        args=("--repository", str(repo)),
        **options,  # type: ignore[arg-type]
    )


def fs_config(entry: Path, root: Path, **options: object) -> MCPServerConfig:
    return MCPServerConfig(
        name="fs",
        command="node",
        args=(str(entry), str(root)),
        **options,  # type: ignore[arg-type]
    )


def own_server_config(
    name: str = "t", *, refuse_if: Path | None = None, **options: object
) -> MCPServerConfig:
    """The test server over stdio; it refuses to start while `refuse_if` exists."""
    extra = (str(refuse_if),) if refuse_if is not None else ()
    return MCPServerConfig(
        name=name,
        command=sys.executable,
        args=(str(TEST_SERVER), "stdio", *extra),
        **options,  # type: ignore[arg-type]
    )


def faulty_config(
    log: Path, *server_args: str, name: str = "f", **options: object
) -> MCPServerConfig:
    """The misbehaving raw JSON-RPC server over stdio; it logs each call it receives."""
    return MCPServerConfig(
        name=name,
        command=sys.executable,
        args=(str(FAULTY_SERVER), str(log), *server_args),
        **options,  # type: ignore[arg-type]
    )


def received(log: Path) -> list[tuple[int, str, str]]:
    """The calls the faulty server received, as ``(pid, tool, text)`` in order."""
    if not log.exists():
        return []
    rows = []
    for line in log.read_text().splitlines():
        if not line.startswith("child "):
            pid, tool, text = line.split(" ", 2)
            rows.append((int(pid), tool, text))
    return rows


def logged_children(log: Path) -> list[int]:
    """Pids of the children `crash_keep_stdout` left behind."""
    if not log.exists():
        return []
    return [
        int(line.split()[1])
        for line in log.read_text().splitlines()
        if line.startswith("child ")
    ]


@asynccontextmanager
async def http_test_server(port: int) -> AsyncIterator[Process]:
    """The test server over streamable HTTP on 127.0.0.1:`port`, killed on exit."""
    process = await anyio.open_process(
        [sys.executable, str(TEST_SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await wait_for_port(port)
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()


class Recorder:
    """Wraps a runner: logs starts and ends, records which calls overlapped.

    `barrier(ids)` makes each of those calls wait, on entry, until all of them
    have entered: the batch can only finish if the Dispatcher ran them at once.
    """

    def __init__(
        self, runner: Callable[[tw.ToolCall], Awaitable[tw.ToolResult]]
    ) -> None:
        self._runner = runner
        self.log: list[str] = []
        self.running: set[str] = set()
        self.overlaps: set[frozenset[str]] = set()
        self.peak = 0
        self._barriers: dict[str, tuple[frozenset[str], anyio.Event]] = {}
        self._arrived: dict[frozenset[str], set[str]] = {}

    def barrier(self, ids: set[str]) -> None:
        group = frozenset(ids)
        event = anyio.Event()
        self._arrived[group] = set()
        for call_id in ids:
            self._barriers[call_id] = (group, event)

    async def _meet(self, call_id: str) -> None:
        if call_id not in self._barriers:
            return
        group, event = self._barriers[call_id]
        self._arrived[group].add(call_id)
        if self._arrived[group] == group:
            event.set()
        with anyio.fail_after(RENDEZVOUS_TIMEOUT):
            await event.wait()

    async def __call__(self, call: tw.ToolCall) -> tw.ToolResult:
        self.overlaps.update(frozenset({call.id, other}) for other in self.running)
        self.running.add(call.id)
        self.peak = max(self.peak, len(self.running))
        self.log.append(f"start {call.id}")
        try:
            await self._meet(call.id)
            return await self._runner(call)
        finally:
            self.running.discard(call.id)
            self.log.append(f"end {call.id}")

    def overlapped_with(self, call_id: str) -> set[str]:
        return {
            other for pair in self.overlaps if call_id in pair for other in pair
        } - {call_id}


def lifecycle(
    registry: tw.ToolRegistry, tmp_path: Path
) -> tuple[ToolRunner, list[Event]]:
    """The real execution lifecycle, with its events collected."""
    events: list[Event] = []
    runner = ToolRunner(
        registry,
        state=SessionState(workspace=tmp_path, results_dir=tmp_path / "results"),
        on_event=events.append,
    )
    return runner, events


def running_ids(events: list[Event]) -> list[str]:
    return [e.call_id for e in events if isinstance(e, ToolRunning)]


def child_pids(needle: str) -> list[int]:
    """Our direct child processes whose command line contains `needle`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and needle.encode() in cmdline:
            found.append(int(entry))
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_for_port(port: int) -> None:
    """Wait until something accepts connections on 127.0.0.1:`port`."""
    with anyio.fail_after(30):
        while True:
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
            else:
                await stream.aclose()
                return


async def wait_until(predicate: Callable[[], bool], what: str) -> None:
    """Poll `predicate` until it holds (a condition wait, not a timing assertion)."""
    try:
        with anyio.fail_after(30):
            while not predicate():  # noqa: ASYNC110 - states of other processes
                await anyio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None
