"""`toolweave run` end to end with a real provider SDK (openai) against loopback."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import pytest
from cli_support import json_lines
from typer.testing import CliRunner, Result

from toolweave.cli import app
from toolweave.sessions import CallState, SQLiteSessionStore

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import FIXTURES, JsonReply, LoopbackServer, fixture


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


def _whole(name: str) -> JsonReply:
    return JsonReply(
        200, json.loads((FIXTURES / "openai_chat" / f"{name}.json").read_text())
    )


def _run_local(server: LoopbackServer, db: Path, *extra: str) -> Result:
    return CliRunner().invoke(
        app,
        [
            "run",
            "look around",
            "--model",
            "openai-compatible:local",
            "--base-url",
            server.url + "/v1",
            "--json",
            "--store",
            str(db),
            *extra,
        ],
    )


def test_no_stream_sends_every_request_whole(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.py").write_text("# TODO\n")
    with LoopbackServer() as server:
        server.script(_whole("tools"), _whole("text"))
        result = _run_local(server, tmp_path / "s.db", "--no-stream")
        assert server.pending == 0 and server.errors == []
        asked = [r.body.get("stream") for r in server.requests]
    assert result.exit_code == 0, result.output
    assert asked == [None, None]
    lines = json_lines(result.stdout)
    assert lines[-1]["reason"] == "completed" and lines[-1]["output"] == "Hello, world!"
    assert not [line for line in lines if line["type"] == "Warning"]


def test_a_server_refusing_to_stream_with_tools_is_a_warning_then_whole_requests(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "a.py").write_text("# TODO\n")
    refusal = JsonReply(
        500,
        {"error": {"message": "Automatic streaming tool choice is not supported"}},
    )
    with LoopbackServer() as server:
        server.script(refusal, _whole("tools"), _whole("text"))
        result = _run_local(server, tmp_path / "s.db")
        assert server.pending == 0 and server.errors == []
        asked = [r.body.get("stream") for r in server.requests]
    assert result.exit_code == 0, result.output
    assert asked == [True, None, None]
    lines = json_lines(result.stdout)
    warnings = [line for line in lines if line["type"] == "Warning"]
    assert len(warnings) == 1 and "refused to stream" in warnings[0]["message"]
    assert lines[-1]["reason"] == "completed"
    store = SQLiteSessionStore(tmp_path / "s.db")
    assert [c.state for c in store.calls(lines[0]["session_id"])] == [
        CallState.FINISHED
    ] * 3
    store.close()
