"""`toolweave run` end to end with a real provider SDK (openai) against loopback."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest
from cli_support import json_lines
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.sessions import CallState, SQLiteSessionStore

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import LoopbackServer, fixture


def test_run_with_an_openai_compatible_server(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "a.py").write_text("print('a')  # TODO\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "m.py").write_text("# TODO\n")
    (workspace / "README.md").write_text("# hi\n")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    db = tmp_path / "sessions.db"
    with LoopbackServer() as server:
        server.script(fixture("openai_chat", "tools"), fixture("openai_chat", "text"))
        result = CliRunner().invoke(
            app,
            [
                "run",
                "look around",
                "--model",
                "openai-compatible:gpt-4.1",
                "--base-url",
                server.url + "/v1",
                "--json",
                "--store",
                str(db),
            ],
        )
        assert server.pending == 0 and server.errors == []
        follow_up = server.requests[1].body
    assert result.exit_code == 0, result.output
    lines = json_lines(result.stdout)
    assert lines[-1]["type"] == "RunFinished" and lines[-1]["reason"] == "completed"
    assert lines[-1]["output"] == "Hello, world!"
    tool_messages = [m for m in follow_up["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [
        "call_01A",
        "call_01B",
        "call_01C",
    ]
    store = SQLiteSessionStore(db)
    sid = lines[0]["session_id"]
    assert [c.state for c in store.calls(sid)] == [CallState.FINISHED] * 3
    store.close()
    gc.collect()  # an HTTP client left open would surface here as a ResourceWarning
