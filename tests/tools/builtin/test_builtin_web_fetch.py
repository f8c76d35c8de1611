from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from builtin_support import run

from toolweave._exceptions import ToolError, ToolInputError, ToolTimeoutError
from toolweave.tools import Access, Concurrency, Interrupt, SessionState
from toolweave.tools.builtin import WebFetchTool, html_to_text

pytestmark = pytest.mark.anyio

PAGE = b"""<!doctype html><html><head><title>Demo page</title>
<style>body{color:red}</style><script>alert('x')</script></head>
<body><h1>Welcome</h1><p>Some   <b>bold</b> text.</p>
<ul><li>first</li><li>second</li></ul>
<a href="https://example.org/doc">the docs</a></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif self.path == "/json":
            self._send(200, "application/json", b'{"a": 1}')
        elif self.path == "/big":
            self._send(200, "text/plain", b"x" * 300_000)
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n....")
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/json")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/slow":
            self.release.wait(10)
            self._send(200, "text/plain", b"late")
        else:
            self._send(404, "text/plain", b"no such page")


@pytest.fixture
def server() -> Iterator[str]:
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"release": release})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    release.set()
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


async def test_html_becomes_text(server: str, state: SessionState) -> None:
    out = await run(WebFetchTool(), {"url": f"{server}/page"}, state)
    header, text = out.split("\n\n", 1)
    assert header == f"URL: {server}/page\nStatus: 200\nContent-Type: text/html"
    assert text == (
        "Demo page\n\n# Welcome\n\nSome bold text.\n\n- first\n- second\n"
        "the docs (https://example.org/doc)"
    )
    assert "alert" not in out
    assert "color" not in out


async def test_json_and_redirects(server: str, state: SessionState) -> None:
    out = await run(WebFetchTool(), {"url": f"{server}/redirect"}, state)
    assert (
        out
        == f'URL: {server}/json\nStatus: 200\nContent-Type: application/json\n\n{{"a": 1}}'
    )


async def test_size_limits(server: str, state: SessionState) -> None:
    out = await run(WebFetchTool(max_bytes=1000), {"url": f"{server}/big"}, state)
    assert out.endswith("x" * 1000 + "\n\n[download stopped at 1000 bytes]")
    out = await run(WebFetchTool(), {"url": f"{server}/big", "max_chars": 500}, state)
    assert out.endswith("x" * 500 + "\n\n[text cut at 500 of 300000 characters]")


async def test_timeout(server: str, state: SessionState) -> None:
    with pytest.raises(ToolTimeoutError, match=r"longer than 0\.3s"):
        await run(WebFetchTool(timeout=0.3), {"url": f"{server}/slow"}, state)


async def test_errors(server: str, state: SessionState) -> None:
    tool = WebFetchTool()
    with pytest.raises(ToolError, match="HTTP 404\nno such page"):
        await run(tool, {"url": f"{server}/missing"}, state)
    with pytest.raises(ToolError, match=r"'image/png'.*not text"):
        await run(tool, {"url": f"{server}/image"}, state)
    with pytest.raises(ToolInputError, match="only http and https"):
        await run(tool, {"url": "file:///etc/passwd"}, state)
    with pytest.raises(ToolError, match="ConnectError"):
        await run(tool, {"url": "http://127.0.0.1:1/"}, state)


def test_html_to_text_survives_broken_markup() -> None:
    assert html_to_text("<p>unclosed <b>bold<div>next</p></i>") == "unclosed bold\nnext"
    assert html_to_text("<pre>a\n  b</pre>") == "a\nb"


def test_declaration() -> None:
    tool = WebFetchTool()
    args = tool.parse({"url": "https://example.org"})
    assert tool.name == "web_fetch"
    assert tool.concurrency_for(args) is Concurrency.SAFE
    assert tool.access_for(args) == Access(reads=("net:example.org",))
    assert tool.interrupt is Interrupt.CANCEL
