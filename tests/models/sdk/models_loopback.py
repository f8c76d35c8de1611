"""A loopback HTTP server that speaks the providers' wire formats, for the official SDKs.

It runs `http.server` in a thread on 127.0.0.1 with an ephemeral port, so it works
the same under asyncio and trio. Tests script the replies in order; each reply is
plain JSON or a server-sent-event stream (chunked, like the real APIs), optionally
cut mid-way by closing the socket. Every request is recorded.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class JsonReply:
    """A plain JSON response (errors, mostly)."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SseReply:
    """A 200 text/event-stream response, sent as HTTP/1.1 chunks.

    `raw` is the SSE text exactly as the wire carries it. `cut_after_events`
    closes the socket after that many events without ending the chunked body.
    """

    raw: str
    cut_after_events: int | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def events(self) -> list[str]:
        return [e + "\n\n" for e in self.raw.strip("\n").split("\n\n") if e.strip()]


@dataclass(frozen=True)
class RawReply:
    """Any body with any status and content type (a proxy's page, a bare list …).

    `content_type` None sends no content-type header at all.
    """

    status: int
    body: bytes
    content_type: str | None = "text/html"


@dataclass(frozen=True)
class Hangup:
    """Close the connection without a response, as a server whose socket died does."""


Reply = JsonReply | SseReply | RawReply | Hangup


def fixture(provider: str, name: str, **substitutions: object) -> SseReply:
    """The recorded-shape SSE fixture `fixtures/<provider>/<name>.sse`, with `$name`s filled."""
    text = (FIXTURES / provider / f"{name}.sse").read_text()
    if substitutions:
        text = Template(text).substitute({k: str(v) for k, v in substitutions.items()})
    return SseReply(text)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class LoopbackServer:
    """Scripted provider endpoint. Use as a context manager; `url` is its base URL."""

    def __init__(self) -> None:
        self._replies: deque[Reply] = deque()
        self.requests: list[Received] = []
        self.unexpected: list[str] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # Send each SSE chunk at once, as the real APIs do (no Nagle delay).
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                try:
                    server._handle(self)
                except ConnectionError:
                    pass  # the client hung up (a cut, or an abandoned stream)
                except Exception as exc:
                    server.errors.append(repr(exc))
                    raise

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            daemon=True,
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _handle(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length", "0"))
        raw = handler.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with self._lock:
            self.requests.append(Received(handler.path, dict(handler.headers), body))
            reply = self._replies.popleft() if self._replies else None
        if reply is None:
            self.unexpected.append(handler.path)
            reply = JsonReply(
                500, {"error": {"type": "api_error", "message": "no scripted reply"}}
            )
        if isinstance(reply, JsonReply):
            _send_json(handler, reply)
        elif isinstance(reply, Hangup):
            _cut(handler)
        elif isinstance(reply, RawReply):
            _send_raw(handler, reply)
        else:
            _send_sse(handler, reply)


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up on a cut or an abandoned stream is expected here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _send_json(handler: http.server.BaseHTTPRequestHandler, reply: JsonReply) -> None:
    data = json.dumps(reply.body).encode()
    handler.send_response(reply.status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    for key, value in reply.headers.items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def _send_raw(handler: http.server.BaseHTTPRequestHandler, reply: RawReply) -> None:
    handler.send_response(reply.status)
    if reply.content_type is not None:
        handler.send_header("content-type", reply.content_type)
    handler.send_header("content-length", str(len(reply.body)))
    handler.end_headers()
    handler.wfile.write(reply.body)
    handler.wfile.flush()


def _send_sse(handler: http.server.BaseHTTPRequestHandler, reply: SseReply) -> None:
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("transfer-encoding", "chunked")
    handler.send_header("cache-control", "no-cache")
    for key, value in reply.headers.items():
        handler.send_header(key, value)
    handler.end_headers()
    for sent, event in enumerate(reply.events):
        if reply.cut_after_events is not None and sent == reply.cut_after_events:
            _cut(handler)
            return
        data = event.encode()
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def _cut(handler: http.server.BaseHTTPRequestHandler) -> None:
    """Drop the connection mid-body, as a dying proxy or server would."""
    handler.wfile.flush()
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
