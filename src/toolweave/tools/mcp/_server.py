"""MCPServer: one server's connection, started on demand and shared by all its tools."""

from __future__ import annotations

import logging
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
from pydantic import ValidationError

from ..._exceptions import MCPConnectionError, ToolError, ToolTimeoutError
from ._config import MCPServerConfig
from ._transport import open_transport
from ._wire import OUTGOING, Outgoing, Wire

__all__ = ["MCPServer", "MCPServerStatistics", "ProgressListener"]

logger = logging.getLogger(__name__)

ProgressListener = Callable[[str, float | None], None]
"""Receives a call's progress as ``(message, fraction or None)``."""

_CLIENT_INFO = mt.Implementation(name="toolweave", version="0.1.0")

RETRY_INTERVAL = 1.0
"""Seconds after a failed start during which `MCPServer.connect` does not retry."""

PROBE_TIMEOUT = 5.0
"""Seconds a server has to answer a ping once one of its calls went unanswered.

A server that does not is taken as hung (or dead with its output held open by
a child): its connection is dropped and the next call starts it again.
"""


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
    """Times a live connection was lost (the server exited or hung, the link broke)."""
    calls_in_flight: int
    """Tool calls sent and not yet answered."""
    stray_lines: int = 0
    """Lines from the server that were not JSON-RPC and answered no call (ignored)."""


@dataclass(eq=False)
class _Call(Outgoing):
    """One tool call on a connection; `fail` ends it at once with an error."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    failure: ToolError | None = None

    def fail(self, error: ToolError) -> None:
        if self.failure is None:
            self.failure = error
            self.scope.cancel()


@dataclass(eq=False)
class _Connection:
    """One session. `scope` encloses it: cancelling it shuts the connection down."""

    scope: anyio.CancelScope
    session: ClientSession | None = None
    listed: tuple[mt.Tool, ...] = ()
    alive: bool = True
    closing: bool = False
    """Shut down on purpose (the server set closed): not a disconnect."""
    reason: str | None = None
    """Why it was lost, for the calls it fails and a failed start."""
    stray: str | None = None
    """The last line it ignored (named when a start goes unanswered)."""
    calls: set[_Call] = field(default_factory=set)
    probing: anyio.Event | None = None
    """Set while a ping decides whether the server still answers."""

    def call_for(self, request_id: mt.RequestId) -> _Call | None:
        return next((c for c in self.calls if c.request_id == request_id), None)


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


class _Watch:
    """What the wire of one connection reports, applied to it (a `WireListener`)."""

    def __init__(self, server: MCPServer, conn: _Connection) -> None:
        self._server = server
        self._conn = conn

    def ended(self) -> None:
        self._server._lost(
            self._conn,
            "the stream from the server ended (it exited, or closed its output)",
        )

    def unknown_answer(self, what: str) -> None:
        self._server._lost(
            self._conn,
            f"it sent an answer whose id matches no request awaiting one ({what}),"
            " so its answers can no longer be matched to their calls",
        )

    def bad_answer(self, request_id: mt.RequestId, what: str) -> None:
        server, conn = self._server, self._conn
        call = conn.call_for(request_id)
        if call is not None:
            call.fail(
                ToolError(
                    f"MCP server {server.name!r} answered this call with a message"
                    f" that is not valid JSON-RPC ({what}). The request reached the"
                    " server, so the call's effects are unknown."
                )
            )
        elif conn.session is None:  # an answer to the handshake
            server._lost(conn, f"it answered with invalid JSON-RPC ({what})")
        else:  # a late answer to a call that already ended
            logger.warning(
                "MCP server %r: a late answer is not valid JSON-RPC (%s)",
                server.name,
                what,
            )

    def stray_line(self, what: str) -> None:
        self._conn.stray = what
        self._server._stray_lines += 1
        logger.warning(
            "MCP server %r wrote a line that is not JSON-RPC (ignored): %s",
            self._server.name,
            what,
        )


@final
class MCPServer:
    """One MCP server: its connection lifecycle, shared by every tool it offers.

    The connection runs as a task in the task group of `open_mcp_servers`, so it
    outlives any single call and is torn down when that context exits. One
    `ClientSession` carries every call: the SDK correlates concurrent requests by
    id, so tools of one server may call at once over it.

    A connection is dropped, and the next call (its tool's readiness step)
    starts the server again, when: its stream ends or breaks (the server
    exited, its stdout closed); it sends an answer whose id matches no request
    awaiting one; or, after a call went unanswered (a timeout, a cancel), it
    does not answer a ping within `PROBE_TIMEOUT`. Calls in flight on a dropped
    connection end at once with an `MCPConnectionError` that says whether the
    request had been sent (its effects are unknown) or not (it did not run).
    An answer that is not valid JSON-RPC ends its own call at once; a line that
    answers no call is ignored (`MCPServerStatistics.stray_lines`). Stdio
    output is decoded leniently: a byte that is not UTF-8 becomes U+FFFD.
    HTTP servers are reconnected the same way.

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
        self._stray_lines = 0
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
        """True while a live, initialised session exists that is not under a probe."""
        conn = self._conn
        return conn is not None and conn.alive and conn.probing is None

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
            stray_lines=self._stray_lines,
        )

    async def connect(self) -> None:
        """Start and initialise the server unless it is ready. A checkpoint.

        Concurrent callers share one attempt. While a ping decides whether a
        silent server still answers, callers wait for its verdict (at most
        `PROBE_TIMEOUT`), so a call after a hang goes to a server that answers.
        A start that failed less than `RETRY_INTERVAL` seconds ago is not
        retried: its failure is raised again, so the calls of one batch (whose
        readiness steps all saw it fail) do not each start the server once more
        while holding a slot.

        Raises:
            MCPConnectionError: the server did not start, initialise and list its
                tools within ``startup_timeout``, or the server set is closed.
        """
        async with self._lock:
            probing = self._conn.probing if self._conn is not None else None
            if probing is not None:
                await probing.wait()
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
        for conn in list(self._live):
            conn.closing = True
            self._lost(conn, "the MCP server set was closed")

    async def _run(
        self, *, task_status: anyio.abc.TaskStatus[MCPConnectionError | None]
    ) -> None:
        """Own one connection from start to shutdown; report the start via task_status.

        Never raises (but for cancellation): a failed start is handed to `connect`
        as a value, and a failure after the start only marks the connection lost,
        so nothing escapes into the server set's task group.
        """
        deadline = anyio.current_time() + self.config.startup_timeout
        conn = _Connection(anyio.CancelScope(deadline=deadline))
        self._live.add(conn)
        cause: BaseException | None = None
        try:
            await self._serve(conn, task_status)
        except Exception as exc:  # any fault ends this connection, nothing else
            cause = exc
            self._lost(conn, _describe(exc))
        finally:
            self._live.discard(conn)
        if conn.session is None:
            task_status.started(self._start_error(conn, cause))
        else:
            self._lost(conn, "the connection ended")

    async def _serve(
        self, conn: _Connection, task_status: anyio.abc.TaskStatus[Any]
    ) -> None:
        with conn.scope:
            async with open_transport(self.config) as (read, write):
                wire = Wire(read, write, _Watch(self, conn))
                async with ClientSession(
                    wire.read, wire.write, client_info=_CLIENT_INFO
                ) as session:
                    await session.initialize()
                    conn.listed = await _list_all_tools(session)
                    conn.scope.deadline = math.inf
                    conn.session = session
                    self._conn = conn
                    task_status.started(None)
                    await anyio.sleep_forever()

    def _lost(self, conn: _Connection, reason: str) -> None:
        """Drop `conn`: end its calls at once, shut it down; count an unplanned loss."""
        if not conn.alive:
            return
        if conn.session is not None and not conn.closing:
            self._disconnects += 1
        conn.alive = False
        conn.reason = reason
        for call in list(conn.calls):
            call.fail(self._broken(call, reason))
        conn.scope.cancel()

    def _start_error(
        self, conn: _Connection, cause: BaseException | None
    ) -> MCPConnectionError:
        if conn.reason is not None:
            why = conn.reason
        else:
            why = f"no answer within {self.config.startup_timeout:g}s"
            if conn.stray is not None:
                why += f" (it wrote a line that is not JSON-RPC: {conn.stray})"
        error = MCPConnectionError(
            f"MCP server {self.name!r} failed to start: {why}. No tool call was sent"
            " to it."
        )
        error.__cause__ = cause
        return error

    def _broken(self, call: _Call, reason: str) -> MCPConnectionError:
        """The error of a call whose connection was dropped for `reason`."""
        where = f"MCP server {self.name!r}"
        if call.sent:
            return MCPConnectionError(
                f"The connection to {where} broke while this call waited for its"
                f" answer: {reason}. The request had been sent, so the call's"
                " effects are unknown (it may have run). The server is restarted"
                " on the next call."
            )
        return MCPConnectionError(
            f"The connection to {where} broke before this call was sent: {reason}."
            " The call did not run. The server is restarted on the next call."
        )

    def _suspect(self, conn: _Connection) -> None:
        """A sent call went unanswered: ping the server (once at a time) in the background."""
        if conn.alive and conn.session is not None and conn.probing is None:
            conn.probing = anyio.Event()
            self._task_group.start_soon(self._probe, conn, conn.session)

    async def _probe(self, conn: _Connection, session: ClientSession) -> None:
        """Drop `conn` unless the server answers a ping within `PROBE_TIMEOUT`."""
        probing = conn.probing
        assert probing is not None
        OUTGOING.set(None)  # this task's context is a copy of the call's
        try:
            with anyio.move_on_after(PROBE_TIMEOUT) as scope:
                await session.send_ping()
            if scope.cancelled_caught:
                self._lost(
                    conn,
                    f"it did not answer a ping within {PROBE_TIMEOUT:g}s after a"
                    " call went unanswered",
                )
        except Exception as exc:  # a failed ping ends the connection, nothing else
            self._lost(
                conn, f"a ping after an unanswered call failed ({_describe(exc)})"
            )
        finally:
            conn.probing = None
            probing.set()

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
        ``(message, fraction or None)``. A call that is cancelled or times out
        after its request was sent makes the server's liveness suspect (see the
        class docstring).

        Raises:
            MCPConnectionError: the server would not start, or the connection
                broke during the call (the message says whether the request
                had been sent).
            ToolTimeoutError: the server did not answer within ``timeout``.
            ToolError: the server answered with a protocol error, or with an
                answer that is not a valid tool result.
        """
        if not self.ready:
            await self.connect()
        conn = self._conn
        assert conn is not None
        assert conn.session is not None
        call = _Call()
        conn.calls.add(call)
        self._in_flight += 1
        token = OUTGOING.set(call)
        try:
            result = await self._send(conn, call, tool, arguments, on_progress)
        except anyio.get_cancelled_exc_class():
            if call.sent:
                self._suspect(conn)
            raise
        finally:
            OUTGOING.reset(token)
            conn.calls.discard(call)
            self._in_flight -= 1
        if result is None:
            assert call.failure is not None
            raise call.failure
        return result

    async def _send(
        self,
        conn: _Connection,
        call: _Call,
        tool: str,
        arguments: dict[str, Any],
        on_progress: ProgressListener | None,
    ) -> mt.CallToolResult | None:
        """The call's result, or None once `call.fail` ended it; raises the SDK's faults mapped."""
        assert conn.session is not None
        where = f"MCP server {self.name!r}"
        try:
            with call.scope:
                return await conn.session.call_tool(
                    tool,
                    arguments,
                    read_timeout_seconds=self.config.timeout,
                    progress_callback=_progress_fn(on_progress),
                )
            return None
        except MCPError as exc:
            if call.failure is not None:
                raise call.failure from exc
            if exc.code == mt.CONNECTION_CLOSED:
                self._lost(
                    conn, conn.reason or f"the connection closed ({exc.message})"
                )
                raise self._broken(call, conn.reason or exc.message) from exc
            if exc.code == mt.REQUEST_TIMEOUT:
                self._suspect(conn)
                raise ToolTimeoutError(
                    f"{where} did not answer in time ({exc.message}). The request"
                    " was sent, so the call's effects are unknown."
                ) from exc
            raise ToolError(f"{where} returned an error: {exc.message}") from exc
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self._lost(conn, f"its stream broke ({type(exc).__name__})")
            raise self._broken(call, conn.reason or "its stream broke") from exc
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise ToolError(
                f"{where} answered with a result that is not a valid tool result"
                f" ({problems}). The request reached the server, so the call's"
                " effects are unknown."
            ) from exc
        except RuntimeError as exc:
            # The SDK raises RuntimeError for a result that breaks the tool's output
            # schema, or one that needs user input toolweave cannot provide.
            raise ToolError(f"{where}: {exc}") from exc
