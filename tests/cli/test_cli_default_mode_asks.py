"""`toolweave run` in `default` mode asks at the terminal, and denies without one.

Through the real entry point in a subprocess: stdin a pipe (no terminal: the
call is denied with an error result naming the setting that would allow it),
or a pseudo-terminal whose typed answer decides.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_support import final, json_lines, script, tools

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "bash": ({"command": "echo x > made.txt"}, 'permissions.allow = ["bash(echo x'),
    "write": ({"path": "made.txt", "content": "x\n"}, "--permission-mode accept_edits"),
}


def _run(
    tmp_path: Path, workspace: Path, name: str, *extra: str, answer: str | None = None
) -> tuple[int, list[dict[str, Any]], str]:
    args, _ = CASES[name]
    steps = script(tmp_path / "s.json", tools(("c1", name, args)), final("finished"))
    command = [*CLI, "run", "task", "--scripted", str(steps), "--json", *extra]
    command += ["--store", str(tmp_path / "s.db")]
    if answer is None:
        proc = subprocess.run(
            command,
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return proc.returncode, json_lines(proc.stdout), proc.stderr
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer.encode() + b"\n")  # typed ahead; read at the prompt
        proc = subprocess.run(
            command,
            cwd=workspace,
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    return proc.returncode, json_lines(proc.stdout), proc.stderr


def _result(lines: list[dict[str, Any]]) -> dict[str, Any]:
    (ready,) = [line for line in lines if line["type"] == "ToolResultReady"]
    result: dict[str, Any] = ready["result"]
    return result


@pytest.mark.parametrize("name", sorted(CASES))
def test_without_a_terminal_the_ask_is_denied_naming_the_setting(
    tmp_path: Path, workspace: Path, name: str
) -> None:
    code, lines, stderr = _run(tmp_path, workspace, name)
    assert code == 0, stderr
    result = _result(lines)
    assert result["is_error"], result
    text = str(result["content"])
    assert "no one to ask (no terminal, no ask handler)" in text, text
    assert CASES[name][1] in text, text
    assert not (workspace / "made.txt").exists()
    assert "Permission needed" not in stderr  # nobody was prompted


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize(("answer", "runs"), [("y", True), ("n", False)])
def test_on_a_terminal_the_user_decides(
    tmp_path: Path, workspace: Path, name: str, answer: str, runs: bool
) -> None:
    code, lines, stderr = _run(tmp_path, workspace, name, answer=answer)
    assert code == 0, stderr
    assert "Permission needed" in stderr and "Allow?" in stderr
    result = _result(lines)
    assert result["is_error"] is not runs, result
    assert (workspace / "made.txt").exists() is runs
    if not runs:
        assert str(result["content"]).startswith("Permission denied by the user")


@pytest.mark.parametrize(
    ("name", "mode", "runs"),
    [
        ("write", "accept_edits", True),
        ("bash", "accept_edits", False),
        ("bash", "bypass", True),
        ("write", "plan", False),
    ],
)
def test_the_permission_mode_option_decides_without_a_terminal(
    tmp_path: Path, workspace: Path, name: str, mode: str, runs: bool
) -> None:
    code, lines, stderr = _run(tmp_path, workspace, name, "--permission-mode", mode)
    assert code == 0, stderr
    assert _result(lines)["is_error"] is not runs
    assert (workspace / "made.txt").exists() is runs


def test_an_allow_rule_in_toolweave_toml_lets_the_command_run(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "toolweave.toml").write_text(
        '[permissions]\nallow = ["bash(echo x)"]\n'
    )
    code, lines, stderr = _run(tmp_path, workspace, "bash")
    assert code == 0, stderr
    assert not _result(lines)["is_error"]
    assert (workspace / "made.txt").read_text() == "x\n"


class _Page(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = b"the page"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.parametrize("allowed", [False, True])
def test_a_fetch_from_a_new_host_asks_and_a_domain_rule_allows_it(
    tmp_path: Path, workspace: Path, allowed: bool
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/doc"
        steps = script(
            tmp_path / "s.json",
            tools(("c1", "web_fetch", {"url": url})),
            final("finished"),
        )
        if allowed:
            (workspace / "toolweave.toml").write_text(
                '[permissions]\nallow = ["web_fetch(domain:127.0.0.1)"]\n'
            )
        db = str(tmp_path / "s.db")
        proc = subprocess.run(
            [*CLI, "run", "t", "--scripted", str(steps), "--json", "--store", db],
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert proc.returncode == 0, proc.stderr
    result = _result(json_lines(proc.stdout))
    text = str(result["content"])
    assert result["is_error"] is not allowed, text
    if allowed:
        assert "the page" in text
    else:
        assert 'permissions.allow = ["web_fetch(domain:127.0.0.1)"]' in text
