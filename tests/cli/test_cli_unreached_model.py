"""A CLI run that never reached a model stores no session (issue 27, item 5).

Through the real `toolweave` entry point in a subprocess, against a real HTTP
server on loopback (or a port where nothing listens). Rows: a port with no
server, a server with no API at the path (the missing ``/v1``), a page that is
not the API; each ends with the URL and the fix named, "no session was kept",
and an empty store. Contrast rows: a base URL that cannot be a URL is refused
before the store is opened; a model that answered with its own error keeps
the session (a model was reached, resuming may help); a resumed session is
always kept.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import final, script

from toolweave.sessions import SQLiteSessionStore

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


def toolweave(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextlib.contextmanager
def answering(status: int, body: bytes, content_type: str) -> Iterator[str]:
    """A loopback HTTP server giving every POST the same answer; yields its root URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = httpd.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _sessions(db: Path) -> int:
    store = SQLiteSessionStore(db)
    try:
        return len(store.list_sessions())
    finally:
        store.close()


def _assert_unreached(done: subprocess.CompletedProcess[str], db: Path) -> str:
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "no model was reached" in said, said
    assert "no model answered, so no session was kept" in said, said
    assert "Traceback" not in said and "resume" not in said
    assert _sessions(db) == 0
    return said


@pytest.mark.parametrize("json_mode", [False, True])
def test_a_port_with_no_server_stores_no_session(
    tmp_path: Path, workspace: Path, json_mode: bool
) -> None:
    db = tmp_path / "s.db"
    url = f"http://127.0.0.1:{_free_port()}/v1"
    args = ["run", "x", "--model", "openai-compatible:local", "--base-url", url]
    args += ["--store", str(db), *(["--json"] if json_mode else [])]
    done = toolweave(*args, cwd=workspace)
    said = _assert_unreached(done, db)
    assert "connection refused" in said and "is the port in base_url right?" in said
    if json_mode:  # the line is on stderr; stdout stays JSON lines
        assert "no session was kept" in done.stderr
        for line in done.stdout.splitlines():
            json.loads(line)


@pytest.mark.parametrize(
    ("model", "path", "hint"),
    [
        ("openai-compatible:local", "", "try base_url='{root}/v1'"),
        ("openai:gpt-4.1", "", "try base_url='{root}/v1'"),
        ("openai-responses:gpt-5", "", "try base_url='{root}/v1'"),
        ("openai-compatible:local", "/api", "try base_url='{root}/api/v1'"),
    ],
)
def test_a_server_with_no_api_at_the_path_names_the_fix_and_stores_nothing(
    tmp_path: Path, workspace: Path, model: str, path: str, hint: str
) -> None:
    db = tmp_path / "s.db"
    with answering(404, b'{"detail":"Not Found"}', "application/json") as root:
        done = toolweave(
            "run", "x", "--model", model, "--base-url", root + path,
            "--store", str(db), cwd=workspace, env={"OPENAI_API_KEY": "k"},
        )  # fmt: skip
    said = _assert_unreached(done, db)
    assert hint.format(root=root) in said, said


def test_a_web_page_where_the_api_should_be_stores_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    db = tmp_path / "s.db"
    page = b"<!doctype html><html><body>Grafana</body></html>"
    with answering(200, page, "text/html") as root:
        done = toolweave(
            "run", "x", "--model", "openai-compatible:local",
            "--base-url", root + "/dashboard", "--store", str(db), cwd=workspace,
        )  # fmt: skip
    said = _assert_unreached(done, db)
    assert root + "/dashboard" in said


@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        ("127.0.0.1:8000/v1", "write it as 'http://127.0.0.1:8000/v1'"),
        ("http//localhost:8000/v1", "write it as 'http://localhost:8000/v1'"),
        ("http://127.0.0.1:123456/v1", "is not a port number"),
    ],
)
def test_a_base_url_that_cannot_be_one_is_refused_before_anything_is_stored(
    tmp_path: Path, workspace: Path, base_url: str, said: str
) -> None:
    db = tmp_path / "s.db"
    done = toolweave(
        "run", "x", "--model", "openai-compatible:local", "--base-url", base_url,
        "--store", str(db), cwd=workspace,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], lines
    assert "Traceback" not in done.stderr
    assert not db.exists()


def test_a_model_that_answered_with_its_own_error_keeps_the_session(
    tmp_path: Path, workspace: Path
) -> None:
    """A 400 with the API's error object: a model was reached; the record stays."""
    db = tmp_path / "s.db"
    body = json.dumps({"error": {"message": "context too weird", "code": "x"}})
    with answering(400, body.encode(), "application/json") as root:
        done = toolweave(
            "run", "x", "--model", "openai-compatible:local",
            "--base-url", root + "/v1", "--store", str(db), cwd=workspace,
        )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "the model call failed" in said and "no session was kept" not in said
    assert _sessions(db) == 1


def test_a_resumed_session_is_kept_when_its_model_is_gone(
    tmp_path: Path, workspace: Path
) -> None:
    db = tmp_path / "s.db"
    steps = script(tmp_path / "script.json", final("hello"))
    done = toolweave(
        "run", "x", "--scripted", str(steps), "--store", str(db), "--json",
        cwd=workspace,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    session_id = json.loads(done.stdout.splitlines()[0])["session_id"]
    url = f"http://127.0.0.1:{_free_port()}/v1"
    done = toolweave(
        "resume", session_id, "more", "--model", "openai-compatible:local",
        "--base-url", url, "--store", str(db), cwd=workspace,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert "no model was reached" in said and "no session was kept" not in said
    assert _sessions(db) == 1
