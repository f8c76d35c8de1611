"""MCPServer: one server's connection, started on demand and shared by all its tools."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, final

import anyio
import anyio.abc
import mcp.types as mt
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from ..._exceptions import MCPConnectionError, ToolError, ToolTimeoutError
from ._config import MCPServerConfig
from ._transport import WatchedReadStream, open_transport

__all__ = ["MCPServer", "MCPServerStatistics", "ProgressListener"]

ProgressListener = Callable[[str, float | None], None]
"""Receives a call's progress as ``(message, fraction or None)``."""

_CLIENT_INFO = mt.Implementation(name="toolweave", version="0.1.0")

RETRY_INTERVAL = 1.0
"""Seconds after a failed start during which `MCPServer.connect` does not retry."""


@dataclass(frozen=True, slots=True)
class MCPServerStatistics:
    """A snapshot of one server's connection (`MCPServer.statistics`)."""

    ready: bool
    """Connected and initialised; its tools need no readiness step."""
    starts: int
    """Successful starts so far (1 + restarts)."""
    start_failures: int
    """Start attempts that failed."""
    disconnects: int
    """Times a live connection was lost (the server exited or the link broke)."""
    calls_in_flight: int
    """Tool calls sent and not yet answered."""


@dataclass(eq=False)
class _Connection:
    """One live session; `lost()` marks it dead and asks its task to shut down."""

    session: ClientSession | None = None
    listed: tuple[mt.Tool, ...] = ()
    alive: bool = True
    closing: anyio.Event = field(default_factory=anyio.Event)

    def lost(self) -> None:
        self.alive = False
        self.closing.set()


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _describe(exc: BaseException) -> str:
    return "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(exc))


def _progress_fn(listener: ProgressListener | None) -> ProgressFnT | None:
    """Adapt a ``(message, fraction)`` listener to the SDK's progress callback."""
    if listener is None:
        return None

    async def forward(
        progress: float, total: float | None, message: str | None
    ) -> None:
        fraction = progress / total if total else None
        default = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        listener(message or default, fraction)

    return forward


async def _list_all_tools(session: ClientSession) -> tuple[mt.Tool, ...]:
    tools: list[mt.Tool] = []
    cursor: str | None = None
    while True:
        params = mt.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tuple(tools)


@final
class MCPServer:
    """One MCP server: its connection lifecycle, shared by every tool it offers.

    The connection runs as a task in the task group of `open_mcp_servers`, so it
    outlives any single call and is torn down when that context exits. One
    `ClientSession` carries every call: the SDK correlates concurrent requests by
    id, so tools of one server may call at once over it.

    A server whose stdout closes (it exited or was killed) is noticed at once and
    marked not `ready`; calls in flight get an `MCPConnectionError`, and the next
    `connect` (a tool's readiness step) starts it again. HTTP servers are
    reconnected the same way.

    Loop affinity: all methods must be called from the event loop that opened it.
    """

    def __init__(
        self, config: MCPServerConfig, task_group: anyio.abc.TaskGroup
    ) -> None:
        self.config = config
        """How to reach the server."""
        self._task_group = task_group
        self._lock = anyio.Lock()
        self._conn: _Connection | None = None
        self._failure: MCPConnectionError | None = None
        self._retry_at = -math.inf
        self._starts = 0
        self._start_failures = 0
        self._disconnects = 0
        self._in_flight = 0
        self._closed = False
        self._live: set[_Connection] = set()

    def __repr__(self) -> str:
        return f"<MCPServer {self.name!r} ready={self.ready}>"

    @property
    def name(self) -> str:
        """The server's configured name."""
        return self.config.name

    @property
    def ready(self) -> bool:
        """True while a live, initialised session exists."""
        return self._conn is not None and self._conn.alive

    @property
    def listed_tools(self) -> tuple[mt.Tool, ...]:
        """The tools the server listed at its last successful start."""
        return self._conn.listed if self._conn is not None else ()

    def statistics(self) -> MCPServerStatistics:
        """A snapshot of the connection's counters."""
        return MCPServerStatistics(
            ready=self.ready,
            starts=self._starts,
            start_failures=self._start_failures,
            disconnects=self._disconnects,
            calls_in_flight=self._in_flight,
        )

    async def connect(self) -> None:
        """Start and initialise the server unless it is ready. A checkpoint.

        Concurrent callers share one attempt. A start that failed less than
        `RETRY_INTERVAL` seconds ago is not retried: its failure is raised again,
        so the calls of one batch (whose readiness steps all saw it fail) do not
        each start the server once more while holding a slot.

        Raises:
            MCPConnectionError: the server did not start, initialise and list its
                tools within ``startup_timeout``, or the server set is closed.
        """
        async with self._lock:
            if self.ready:
                return
            if self._closed:
                raise MCPConnectionError(f"MCP server {self.name!r} is closed")
            failure = self._failure
            if failure is not None and anyio.current_time() < self._retry_at:
                raise failure
            failure = await self._task_group.start(self._run)
            self._failure = failure
            if failure is not None:
                self._start_failures += 1
                self._retry_at = anyio.current_time() + RETRY_INTERVAL
                raise failure
            self._starts += 1

    def close(self) -> None:
        """Ask the connection to shut down; `open_mcp_servers` waits for it. Never blocks."""
        self._closed = True
        for conn in self._live:
            conn.closing.set()

    async def _run(
        self, *, task_status: anyio.abc.TaskStatus[MCPConnectionError | None]
    ) -> None:
        """Own one connection from start to shutdown; report the start via task_status.

        Never raises (but for cancellation): a failed start is handed to `connect`
        as a value, and a failure after the start only marks the connection lost,
        so nothing escapes into the server set's task group.
        """
        conn = _Connection()
        self._live.add(conn)
        try:
            await self._serve(conn, task_status)
        except Exception as exc:  # any fault ends this connection, nothing else
            self._lost(conn)
            if conn.session is None:
                task_status.started(self._start_error(_describe(exc), exc))
                return
        finally:
            self._live.discard(conn)
        if conn.session is None:
            timeout = self.config.startup_timeout
            task_status.started(
                self._start_error(f"no answer within {timeout:g}s", None)
            )

    async def _serve(
        self, conn: _Connection, task_status: anyio.abc.TaskStatus[Any]
    ) -> None:
        deadline = anyio.current_time() + self.config.startup_timeout
        with anyio.CancelScope(deadline=deadline) as startup_scope:
            async with open_transport(self.config) as (read, write):
                watched = WatchedReadStream(read, lambda: self._lost(conn))
                async with ClientSession(
                    watched, write, client_info=_CLIENT_INFO
                ) as session:
                    await session.initialize()
                    conn.listed = await _list_all_tools(session)
                    startup_scope.deadline = math.inf
                    conn.session = session
                    self._conn = conn
                    task_status.started(None)
                    if self._closed:  # closed while this connection was starting
                        return
                    await conn.closing.wait()

    def _lost(self, conn: _Connection) -> None:
        """Mark `conn` dead; count it unless we were already closing it."""
        if conn.alive and conn.session is not None and not conn.closing.is_set():
            self._disconnects += 1
        conn.lost()

    def _start_error(self, why: str, cause: BaseException | None) -> MCPConnectionError:
        error = MCPConnectionError(f"MCP server {self.name!r} failed to start: {why}")
        error.__cause__ = cause
        return error

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        on_progress: ProgressListener | None = None,
    ) -> mt.CallToolResult:
        """Call `tool` on the server over the shared session. A checkpoint.

        Connects first if the server is not ready (a caller that skipped the
        readiness step, such as the Dispatcher's sequential path). The server's
        progress notifications for the call go to `on_progress` as
        ``(message, fraction or None)``.

        Raises:
            MCPConnectionError: the server would not start, or the connection
                broke during the call.
            ToolTimeoutError: the server did not answer within ``timeout``.
            ToolError: the server answered with a protocol error.
        """
        if not self.ready:
            await self.connect()
        conn = self._conn
        assert conn is not None
        assert conn.session is not None
        self._in_flight += 1
        try:
            return await self._send(conn, tool, arguments, _progress_fn(on_progress))
        finally:
            self._in_flight -= 1

    async def _send(
        self,
        conn: _Connection,
        tool: str,
        arguments: dict[str, Any],
        progress: ProgressFnT | None,
    ) -> mt.CallToolResult:
        assert conn.session is not None
        where = f"MCP server {self.name!r}"
        try:
            return await conn.session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=self.config.timeout,
                progress_callback=progress,
            )
        except MCPError as exc:
            if exc.code == mt.CONNECTION_CLOSED:
                self._lost(conn)
                raise MCPConnectionError(
                    f"the connection to {where} closed ({exc.message}); the server"
                    " is restarted on the next call"
                ) from exc
            if exc.code == mt.REQUEST_TIMEOUT:
                raise ToolTimeoutError(f"{where}: {exc.message}") from exc
            raise ToolError(f"{where} returned an error: {exc.message}") from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._lost(conn)
            raise MCPConnectionError(
                f"the connection to {where} broke; the server is restarted on the"
                " next call"
            ) from exc
        except RuntimeError as exc:
            # The SDK raises RuntimeError for a result that breaks the tool's output
            # schema, or one that needs user input toolweave cannot provide.
            raise ToolError(f"{where}: {exc}") from exc
