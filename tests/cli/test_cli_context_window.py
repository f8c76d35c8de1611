"""`toolweave run` against a model whose window the prompt cannot fit (issue 29, item 2).

The official openai SDK against a loopback server: the server refuses the
prompt as too long, with nothing that could be dropped; the CLI ends the run as
context_window_exceeded, says why, exits 1, sends nothing more, and the session
store records it.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest
from cli_support import json_lines
from typer.testing import CliRunner

from toolweave.cli import app
from toolweave.sessions import SQLiteSessionStore

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import JsonReply, LoopbackServer

_KOREAN = (
    "병렬 도구 실행은 안전한 호출만 겹쳐서 실행하고 기록은 직렬 실행과 똑같이 남긴다. "
)


def test_a_prompt_over_the_window_ends_as_context_window_exceeded(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    db = tmp_path / "sessions.db"
    refusal = JsonReply(
        400,
        {
            "error": {
                "message": "This model's maximum context length is 4096 tokens."
                " However, your messages resulted in 9100 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
    )
    with LoopbackServer() as server:
        server.script(refusal)
        result = CliRunner().invoke(
            app,
            [
                "run",
                _KOREAN * 120,
                "--model",
                "openai-compatible:local",
                "--base-url",
                server.url + "/v1",
                "--json",
                "--store",
                str(db),
            ],
        )
        assert server.errors == [] and server.unexpected == []
        sent = len(server.requests)
    assert sent == 1  # refused once, never retried unchanged
    assert result.exit_code == 1, result.output
    lines = json_lines(result.stdout)
    assert lines[-1]["type"] == "RunFinished"
    assert lines[-1]["reason"] == "context_window_exceeded"
    assert "9100 tokens" in lines[-1]["detail"]
    store = SQLiteSessionStore(db)
    (run,) = store.runs(lines[0]["session_id"])
    assert run.reason is not None and run.reason.value == "context_window_exceeded"
    store.close()
    gc.collect()
