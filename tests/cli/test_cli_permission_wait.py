"""Timings say what they measure: a wait for the user's "y" is shown as such (issue 27, item 8).

Through the real entry point: `toolweave run` in a subprocess on a
pseudo-terminal, a batch of a read (no ask) and a write (asks), the answer typed
only after the prompt has been shown and a pause (the user thinking). The live
view's batch line, the JSON events and the `timeline` page all leave the wait out
of the batch's wall time and say how long it was; the page draws it as a wait
for permission, not as a call held back.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from cli_support import final, script, tools

CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]
PAUSE = 0.8
"""Seconds the "user" thinks before answering (the tools themselves take ms)."""


def _read_until(fd: int, marker: bytes, limit: float = 60.0) -> bytes:
    seen = b""
    deadline = time.perf_counter() + limit
    while marker not in seen:
        left = deadline - time.perf_counter()
        assert left > 0, seen[-2000:]
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, seen[-2000:]
            seen += chunk
    return seen


def _drain(fd: int, proc: subprocess.Popen[bytes]) -> bytes:
    """Everything the terminal shows until the process ends (its output never blocks)."""
    seen = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal's other end is gone
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=120)
    return seen


def _run_with_a_slow_answer(
    tmp_path: Path, workspace: Path, *extra: str
) -> tuple[str, str]:
    """(stdout, what the terminal showed): stdout a pipe with --json, else the terminal."""
    (workspace / "notes.txt").write_text("old\n")
    steps = script(
        tmp_path / "s.json",
        tools(
            ("c1", "read", {"path": "notes.txt"}),
            ("c2", "write", {"path": "made.txt", "content": "x\n"}),
        ),
        final("finished"),
    )
    command = [*CLI, "run", "task", "--scripted", str(steps), *extra]
    command += ["--store", str(tmp_path / "s.db")]
    controller, terminal = pty.openpty()
    out = tmp_path / "stdout.txt"
    try:
        with out.open("wb") as stdout:
            proc = subprocess.Popen(
                command,
                cwd=workspace,
                stdin=terminal,
                stdout=stdout if extra else terminal,
                stderr=terminal,
                env={**os.environ, "COLUMNS": "200"},
            )
            try:
                shown = _read_until(controller, b"Allow?")
                threading.Event().wait(
                    PAUSE
                )  # the user reads the question, then types y
                os.write(controller, b"y\n")
                os.close(terminal)
                terminal = -1
                shown += _drain(controller, proc)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert proc.returncode == 0, shown[-3000:]
    finally:
        if terminal >= 0:
            os.close(terminal)
        os.close(controller)
    return out.read_text(), shown.decode(errors="replace")


def _seconds(text: str) -> float:
    number, unit = text.split()
    return float(number) / (1000 if unit == "ms" else 1)


def test_the_json_events_carry_the_ask_and_its_answer(
    tmp_path: Path, workspace: Path
) -> None:
    out, _ = _run_with_a_slow_answer(tmp_path, workspace, "--json")
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    asked = [e for e in lines if e["type"] == "PermissionAsked"]
    answered = [e for e in lines if e["type"] == "PermissionAnswered"]
    assert [(e["tool"], e["call_id"]) for e in asked] == [("write", "c2")]
    assert [(e["answer"], e["call_id"]) for e in answered] == [("allow", "c2")]
    assert answered[0]["at"] - asked[0]["at"] >= PAUSE
    started = [e for e in lines if e["type"] == "ToolUseStarted"]
    assert all(e["reads"] is not None for e in started)  # the access, as scheduled
    assert (workspace / "made.txt").read_text() == "x\n"


def test_the_live_view_and_the_timeline_leave_the_wait_out(
    tmp_path: Path, workspace: Path
) -> None:
    _, raw = _run_with_a_slow_answer(tmp_path, workspace)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)  # the terminal's colours
    line = re.search(
        r"batch (\S+ m?s) · serial (\S+ m?s) · lower bound (\S+ m?s) · ([\d.]+)x faster"
        r" than serial · waited (\S+ m?s) for permission \(not in the batch time\)",
        shown,
    )
    assert line is not None, shown[-3000:]
    batch, serial, bound, waited = (_seconds(line[i]) for i in (1, 2, 3, 5))
    assert waited >= PAUSE > batch >= bound - 1e-3
    assert serial < PAUSE and float(line[4]) > 0.0  # never "0.0x faster"
    sid = _session_id(tmp_path)
    page_path = tmp_path / "t.html"
    proc = subprocess.run(
        [
            *CLI,
            "timeline",
            sid,
            "--store",
            str(tmp_path / "s.db"),
            "-o",
            str(page_path),
        ],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    page = page_path.read_text()
    section = re.search(
        r"batch <b>(\S+ m?s)</b> · serial (\S+ m?s) · lower bound (\S+ m?s) ·"
        r" <b>[\d.]+x</b> faster than serial · waited (\S+ m?s) for permission",
        page,
    )
    assert section is not None, page[:3000]
    batch, _, bound, waited = (_seconds(section[i]) for i in range(1, 5))
    assert waited >= PAUSE > batch >= bound - 1e-3
    asks = re.findall(
        r'<rect class="ask"[^>]*><title>waited ([\d.]+) s for permission', page
    )
    assert len(asks) == 1 and float(asks[0]) >= PAUSE
    assert "waiting for the user&#x27;s answer to a permission ask" in page


def _session_id(tmp_path: Path) -> str:
    from toolweave.sessions import SQLiteSessionStore

    store = SQLiteSessionStore(tmp_path / "s.db")
    try:
        (session,) = store.list_sessions()
        return session.id
    finally:
        store.close()
