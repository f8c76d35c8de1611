"""Text no UTF-8 encoding exists for never fails the session store.

A prompt typed on a non-UTF-8 terminal reaches Python with lone surrogates
(``surrogateescape``); a model may send a ``"\\ud800"`` escape in its text or in
a tool call's input. SQLite stores UTF-8 only. The transcript's JSON keeps such
text exactly (escaped); plain columns (a title, a prompt) get U+FFFD.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

import toolweave as tw
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import ScriptedModel
from toolweave.sessions import SessionRecorder, SQLiteSessionStore
from toolweave.sessions._codec import dumps, storable_text

pytestmark = pytest.mark.anyio

LONE = json.loads('"a\\ud800b"')  # what json.loads makes of a model's escape


@tw.tool(concurrency=tw.Concurrency.SAFE, access=tw.Access())
async def echo(text: str) -> str:
    """Echo the text."""
    return text


async def test_a_run_full_of_lone_surrogates_is_stored_and_read_back(
    tmp_path: Path,
) -> None:
    usage = Usage(1, 1)
    model = ScriptedModel(
        [
            ModelResponse(
                [
                    Text("thinking \ud83d"),
                    ToolCall("t1", "echo", {"text": LONE}),
                    ToolCall("t2", "ech\udc80o", {"x\ud800": 1}),
                ],
                StopReason.TOOL_USE,
                usage,
            ),
            ModelResponse([Text("done \udcff")], StopReason.END_TURN, usage),
        ]
    )
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = store.create_session(
        workspace=str(tmp_path), model="scripted", title="fix caf\udce9"
    ).id
    recorder = SessionRecorder(store, sid, model="scripted")
    agent = tw.Agent(model, [echo], config=tw.AgentConfig(workspace=tmp_path))
    async for event in agent.run_stream("fix caf\udce9 please"):
        recorder.record(event)

    assert store.find_session(sid).status == "completed"
    assert store.find_session(sid).title == "fix caf\ufffd"
    user, assistant, results, final = store.messages(sid)
    calls = assistant.tool_calls
    assert calls[0].input == {"text": LONE}  # the model's own input, exactly
    assert results.tool_results[0].text == "a\ufffdb"  # the tool's output, UTF-8
    assert results.tool_results[1].is_error  # the mangled name: an unknown tool
    assert final.content[0] == Text("done \ufffd")  # the loop keeps model text UTF-8
    assert user.content == "fix caf\udce9 please"  # JSON keeps the prompt exactly


def test_dumps_escapes_only_when_it_must() -> None:
    assert dumps({"k": "café"}) == '{"k":"café"}'  # readable when it can be
    escaped = dumps({"k": LONE})
    assert escaped.isascii() and json.loads(escaped) == {"k": LONE}


def test_storable_text_replaces_each_lone_surrogate_once() -> None:
    assert storable_text("plain") == "plain"
    assert storable_text("café") == "café"
    assert storable_text("a\ud800\udc00b\udfff") == "a\ufffd\ufffdb\ufffd"


async def test_every_statement_binds_storable_text(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    info = store.create_session(workspace="/w\udcff", model="m\ud800", title="t")
    found = store.find_session(info.id)
    assert (found.workspace, found.model) == ("/w\ufffd", "m\ufffd")
    await anyio.lowlevel.checkpoint()
