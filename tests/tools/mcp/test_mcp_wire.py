"""The Wire between a transport and the SDK session: what it reports, item by item.

The items are what the SDK's stdio transport hands the session: a
`SessionMessage`, or the exception `jsonrpc_message_adapter.validate_json`
raised for a line (the transport returns parse errors as values). Parsing the
lines here with that same adapter pins the shapes the Wire reads (pydantic's
error records) against the installed `mcp`; test_mcp_wire_faults.py drives the
same lines through a real server.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator

import anyio
import mcp.types as mt
import pytest
from mcp.shared.message import SessionMessage

from toolweave.tools.mcp._wire import OUTGOING, Outgoing, Wire

pytestmark = pytest.mark.anyio


class Reports:
    """A WireListener that keeps what it was told."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []

    def ended(self) -> None:
        self.seen.append(("ended", None))

    def unknown_answer(self, what: str) -> None:
        self.seen.append(("unknown", what))

    def bad_answer(self, request_id: mt.RequestId, what: str) -> None:
        self.seen.append(("bad", (request_id, what)))

    def stray_line(self, what: str) -> None:
        self.seen.append(("stray", what))


def _line(text: str) -> SessionMessage | Exception:
    """A stdout line as the SDK's stdio transport hands it to the session."""
    try:
        return SessionMessage(mt.jsonrpc_message_adapter.validate_json(text))
    except ValueError as exc:
        return exc


def _request(request_id: int, method: str = "tools/call") -> SessionMessage:
    return SessionMessage(
        mt.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method)
    )


class Pipe:
    """A Wire over two memory streams, with the far ends to play the server."""

    def __init__(self) -> None:
        self.to_session, read = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](10)
        write, self.from_session = anyio.create_memory_object_stream[SessionMessage](10)
        self.reports = Reports()
        self.wire = Wire(read, write, self.reports)
        self._streams = (self.to_session, read, write, self.from_session)

    async def deliver(self, item: SessionMessage | Exception) -> None:
        await self.to_session.send(item)
        assert await self.wire.read.receive() is item  # passed on unchanged

    def close(self) -> None:
        for stream in self._streams:
            stream.close()


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    made = Pipe()
    yield made
    made.close()


async def test_a_call_request_is_marked_sent_with_its_id(pipe: Pipe) -> None:
    outgoing = Outgoing()
    token = OUTGOING.set(outgoing)
    try:
        await pipe.wire.write.send(_request(7))
    finally:
        OUTGOING.reset(token)
    assert (outgoing.request_id, outgoing.sent) == (7, True)
    assert (await pipe.from_session.receive()).message.id == 7  # type: ignore[union-attr]


async def test_only_the_tools_call_request_is_the_calls_own(pipe: Pipe) -> None:
    outgoing = Outgoing()
    token = OUTGOING.set(outgoing)
    try:
        await pipe.wire.write.send(_request(3, method="tools/list"))
        assert (outgoing.request_id, outgoing.sent) == (None, False)
        await pipe.wire.write.send(_request(4))
    finally:
        OUTGOING.reset(token)
    assert (outgoing.request_id, outgoing.sent) == (4, True)


async def test_a_request_the_closed_stream_refused_was_not_sent(pipe: Pipe) -> None:
    pipe.from_session.close()
    outgoing = Outgoing()
    token = OUTGOING.set(outgoing)
    try:
        with pytest.raises(anyio.BrokenResourceError):
            await pipe.wire.write.send(_request(5))
    finally:
        OUTGOING.reset(token)
    assert outgoing.sent is False
    # and it awaits no answer: one for it now is an answer to no request
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 5, "result": {}}'))
    assert pipe.reports.seen == [("unknown", "id 5")]


async def test_answers_to_awaited_ids_pass_and_others_are_reported(pipe: Pipe) -> None:
    for request_id in (1, 2, 3):
        await pipe.wire.write.send(_request(request_id))
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 1, "result": {}}'))
    # an id echoed as a string still correlates, as the SDK correlates it
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": "2", "result": {}}'))
    assert pipe.reports.seen == []
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 1, "result": {}}'))  # twice
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 99, "result": {}}'))
    await pipe.deliver(
        _line('{"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "m"}}')
    )
    assert pipe.reports.seen == [
        ("unknown", "id 1"),
        ("unknown", "id 99"),
        ("unknown", "id null, error -1 'm'"),
    ]
    # a late answer for a request whose caller gave up still matches: no fault
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 3, "result": {}}'))
    assert len(pipe.reports.seen) == 3


async def test_an_invalid_answer_to_an_awaited_id_is_that_requests_bad_answer(
    pipe: Pipe,
) -> None:
    await pipe.wire.write.send(_request(4))
    await pipe.wire.write.send(_request(5))
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 4, "result": "oops"}'))
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 5, "error": "not an object"}'))
    assert pipe.reports.seen == [
        ("bad", (4, "result: Input should be an object")),
        ("bad", (5, "error: Input should be an object")),
    ]
    # answered (badly) once: a second one is an answer to no request
    await pipe.deliver(_line('{"jsonrpc": "2.0", "id": 4, "result": 5}'))
    assert pipe.reports.seen[-1] == (
        "unknown",
        '\'{"jsonrpc": "2.0", "id": 4, "result": 5}\', which is not valid JSON-RPC'
        " either",
    )


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("}{ not JSON", "not JSON: '}{ not JSON'"),
        ("\ufffd\ufffd bad bytes", "not JSON: '\ufffd\ufffd bad bytes'"),
        ("[1, 2]", "JSON but not JSON-RPC: '[1, 2]'"),
        ('{"hello": "world"}', 'JSON but not JSON-RPC: \'{"hello": "world"}\''),
        (
            '{"jsonrpc": "2.0", "method": 7}',
            'JSON but not JSON-RPC: \'{"jsonrpc": "2.0", "method": 7}\'',
        ),
    ],
)
async def test_a_line_that_answers_nothing_is_a_stray_line(
    pipe: Pipe, line: str, what: str
) -> None:
    await pipe.wire.write.send(_request(1))
    await pipe.deliver(_line(line))
    assert pipe.reports.seen == [("stray", what)]


async def test_a_long_stray_line_is_shown_cut(pipe: Pipe) -> None:
    await pipe.deliver(_line("x" * 500))
    [(kind, what)] = pipe.reports.seen
    assert kind == "stray"
    assert isinstance(what, str)
    assert what.endswith("…'")
    assert len(what) < 200


async def test_an_exception_of_another_kind_is_a_stray_line(pipe: Pipe) -> None:
    await pipe.deliver(RuntimeError("the transport says no"))
    assert pipe.reports.seen == [("stray", "RuntimeError: 'the transport says no'")]


async def test_the_end_of_the_stream_is_reported_once(pipe: Pipe) -> None:
    pipe.to_session.close()
    for _ in range(2):
        with pytest.raises(anyio.EndOfStream):
            await pipe.wire.read.receive()
    assert pipe.reports.seen == [("ended", None)]
    assert [item async for item in pipe.wire.read] == []


async def test_the_senders_context_of_the_inner_stream_is_forwarded() -> None:
    class WithContext:
        last_context = contextvars.copy_context()

    send, read = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    write, receive = anyio.create_memory_object_stream[SessionMessage](1)
    with send, read, write, receive:
        plain = Wire(read, write, Reports())
        assert plain.read.last_context is None
        keeping = Wire(WithContext(), write, Reports())  # type: ignore[arg-type]
        assert keeping.read.last_context is WithContext.last_context
