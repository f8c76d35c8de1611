"""Watching one MCP connection's JSON-RPC traffic for what the SDK drops in silence.

The SDK's session reads a transport's stream and correlates answers with
requests by id. What it cannot correlate it drops: an answer whose id matches
no request (logged at debug level), and a line that is not valid JSON-RPC (a
parse error handed to the session as a value, then dropped). The call the
answer was meant for then waits for its whole timeout. `Wire` sits between the
transport and the session, sees every message both ways, and tells a
`WireListener` what happened, so the connection can end the calls concerned at
once. It changes no message: the session still gets everything.
"""

from __future__ import annotations

import json
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

import anyio
import mcp.types as mt

# Typing only: the Protocols both the SDK's transports and its session speak.
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["OUTGOING", "Outgoing", "Wire", "WireListener"]

_SHOWN_CHARS = 120


@dataclass(eq=False, slots=True)
class Outgoing:
    """One tool call's ``tools/call`` request, as the wire saw it leave.

    Set `OUTGOING` to it around the session's ``call_tool``: the SDK (mcp 2.3)
    writes the request from the calling task, so the write is seen in that
    call's context. Should a later SDK write from a task of its own, `sent`
    would stay False and a call would be told "did not run" after it was sent:
    the crash rows of test_mcp_wire_faults.py (which expect "had been sent")
    fail first.
    """

    request_id: mt.RequestId | None = None
    """Its JSON-RPC id (coerced as the SDK correlates it), once written."""
    sent: bool = False
    """Its request was handed to the transport: it may have reached the server.

    False only when it provably did not (never written, or the write failed
    because the stream was already closed).
    """


OUTGOING: ContextVar[Outgoing | None] = ContextVar(
    "toolweave_mcp_outgoing", default=None
)
"""The call whose request the current task is sending, if any."""


class WireListener(Protocol):
    """What a `Wire` reports. Called on the task that reads the stream; must not block."""

    def ended(self) -> None:
        """The stream from the server ended or broke (once)."""

    def unknown_answer(self, what: str) -> None:
        """An answer arrived whose id matches no request awaiting one."""

    def bad_answer(self, request_id: mt.RequestId, what: str) -> None:
        """The answer to `request_id` arrived, but is not valid JSON-RPC."""

    def stray_line(self, what: str) -> None:
        """A line that is not JSON-RPC and answers no request (ignored)."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…")


def _key(value: object) -> mt.RequestId | None:
    """`value` as the SDK correlates request ids; None if it cannot be one."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return coerce_request_id(value)


def _message_object(exc: ValidationError) -> object:
    """The JSON value of a line that parsed as JSON but not as JSON-RPC, or None.

    Pydantic reports each member of the JSON-RPC union on its own; a member
    that misses a field (a request's ``method``, an error's ``error``) reports
    the whole object as its input, and one that refuses the value's type
    reports the value itself.
    """
    for error in exc.errors(include_url=False):
        location = error["loc"]
        whole = len(location) == 1 or (
            len(location) == 2 and error["type"] == "missing"
        )
        if whole:
            value: object = error["input"]
            return value
    return None


def _answer_problem(exc: ValidationError, answer: dict[str, Any]) -> str:
    """What is wrong with an answer-shaped object, from the member it would be."""
    member = "JSONRPCError" if "error" in answer else "JSONRPCResponse"
    problems = [
        f"{'.'.join(str(part) for part in error['loc'][1:]) or 'message'}: {error['msg']}"
        for error in exc.errors(include_url=False)
        if error["loc"] and error["loc"][0] == member
    ]
    return "; ".join(problems) or "not a JSON-RPC response"


class Wire:
    """Both streams of one connection, watched; hand `read` and `write` to the session.

    Tracks the ids of requests written and not yet answered. Reports to the
    listener: an answer to an id not awaiting one (never sent, or already
    answered: answers can no longer be trusted to reach the right call); a line
    that is not JSON-RPC but carries the id of a request awaiting its answer
    (that request's answer is malformed, such as a ``result`` that is not an
    object); any other line that is not JSON-RPC (noise, ignored: a server that
    writes a banner or a child's output to stdout keeps working); the end of
    the stream. An answer for a request whose caller gave up (timed out,
    cancelled) still matches its id: a late answer is not a fault.
    """

    def __init__(
        self,
        read: ReadStream[SessionMessage | Exception],
        write: WriteStream[SessionMessage],
        listener: WireListener,
    ) -> None:
        self._listener = listener
        self._awaiting: set[mt.RequestId] = set()
        self.read = _WatchedRead(read, self)
        """The stream the session reads."""
        self.write = _WatchedWrite(write, self)
        """The stream the session writes."""

    def _wrote(self, message: mt.JSONRPCMessage, outgoing: Outgoing | None) -> None:
        if isinstance(message, mt.JSONRPCRequest):
            key = coerce_request_id(message.id)
            self._awaiting.add(key)
            calls = message.method == "tools/call"
            if calls and outgoing is not None and outgoing.request_id is None:
                outgoing.request_id = key
                outgoing.sent = True

    def _not_written(
        self, message: mt.JSONRPCMessage, outgoing: Outgoing | None
    ) -> None:
        if isinstance(message, mt.JSONRPCRequest):
            key = coerce_request_id(message.id)
            self._awaiting.discard(key)
            if outgoing is not None and outgoing.request_id == key:
                outgoing.sent = False

    def _received(self, item: SessionMessage | Exception) -> None:
        if isinstance(item, Exception):
            self._unreadable(item)
            return
        message = item.message
        if not isinstance(message, mt.JSONRPCResponse | mt.JSONRPCError):
            return
        key = _key(message.id)
        if key is not None and key in self._awaiting:
            self._awaiting.discard(key)
            return
        if isinstance(message, mt.JSONRPCError):
            code, text = message.error.code, message.error.message
            what = f"id {json.dumps(message.id)}, error {code} {_shown(text)}"
        else:
            what = f"id {json.dumps(message.id)}"
        self._listener.unknown_answer(what)

    def _unreadable(self, exc: Exception) -> None:
        if not isinstance(exc, ValidationError):
            self._listener.stray_line(f"{type(exc).__name__}: {_shown(str(exc))}")
            return
        errors = exc.errors(include_url=False)
        if errors and errors[0]["type"] == "json_invalid":
            line = errors[0]["input"]
            self._listener.stray_line(f"not JSON: {_shown(str(line))}")
            return
        value = _message_object(exc)
        shown = _shown(json.dumps(value, ensure_ascii=False, default=repr))
        answer_shaped = (
            isinstance(value, dict)
            and "method" not in value
            and ("result" in value or "error" in value)
        )
        if not answer_shaped:
            self._listener.stray_line(f"JSON but not JSON-RPC: {shown}")
            return
        assert isinstance(value, dict)
        key = _key(value.get("id"))
        what = _answer_problem(exc, value)
        if key is not None and key in self._awaiting:
            self._awaiting.discard(key)
            self._listener.bad_answer(key, what)
        else:
            self._listener.unknown_answer(
                f"{shown}, which is not valid JSON-RPC either"
            )


class _WatchedRead:
    """The read side of a `Wire` (the SDK's ReadStream protocol)."""

    def __init__(
        self, inner: ReadStream[SessionMessage | Exception], wire: Wire
    ) -> None:
        self._inner = inner
        self._wire = wire
        self._ended = False

    @property
    def last_context(self) -> object:
        """The sender's context of the last item, where the transport keeps one.

        The SDK's session reads this attribute (duck-typed) to run handlers in
        the context the transport received a message in; forwarded unchanged.
        """
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """The next item; at the end of the stream, report it (once) and re-raise."""
        try:
            item = await self._inner.receive()
        except (
            anyio.EndOfStream,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        ):
            if not self._ended:
                self._ended = True
                self._wire._listener.ended()
            raise
        self._wire._received(item)
        return item

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _WatchedWrite:
    """The write side of a `Wire` (the SDK's WriteStream protocol)."""

    def __init__(self, inner: WriteStream[SessionMessage], wire: Wire) -> None:
        self._inner = inner
        self._wire = wire

    async def send(self, item: SessionMessage, /) -> None:
        """Send `item`; a request counts as sent from the moment its write starts.

        A write that is cancelled may still have delivered it (the SDK reasons
        the same way), so only a write refused by a closed stream unsends it.
        """
        outgoing = OUTGOING.get()
        self._wire._wrote(item.message, outgoing)
        try:
            await self._inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._wire._not_written(item.message, outgoing)
            raise

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedWrite:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()
