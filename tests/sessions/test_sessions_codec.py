"""The JSON codec: every block round-trips, large results go to blobs, events encode."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from toolweave._exceptions import StoreError
from toolweave.events import (
    CompletionReason,
    ModelCallFinished,
    RunFinished,
    ToolResultReady,
    ToolRunning,
)
from toolweave.messages import (
    Image,
    Message,
    ModelResponse,
    StopReason,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
)
from toolweave.sessions import event_to_json, message_from_json, message_to_json
from toolweave.sessions._blobs import BlobDirectory
from toolweave.sessions._codec import dumps

ASSISTANT = Message(
    "assistant",
    (
        Thinking(
            "hmm", "sig", redacted_data=None, provider_id="r1", encrypted_content="enc"
        ),
        Text("Let me look."),
        ToolCall("c1", "read", {"path": "a.py", "n": [1, 2]}),
        ToolCall("c2", "bash", {}, raw_arguments="{not json"),
    ),
)
RESULTS = Message(
    "user",
    (
        ToolResult("c1", "contents"),
        ToolResult("c2", (Text("out"), Image("aGk=", "image/jpeg")), is_error=True),
        ToolResult("c3", "not run", is_error=True, synthetic=True),
    ),
)


@pytest.mark.parametrize("message", [Message("user", "hello"), ASSISTANT, RESULTS])
def test_messages_round_trip_through_json_text(message: Message) -> None:
    encoded = json.loads(dumps(message_to_json(message)))
    assert message_from_json(encoded) == message


def test_a_large_result_is_stored_as_a_blob_and_read_back(tmp_path: Path) -> None:
    blobs = BlobDirectory(tmp_path / "blobs", threshold=100)
    big = ToolResult("c1", "x" * 5_000)
    message = Message("user", (big, ToolResult("c2", "small")))
    encoded = message_to_json(message, blobs=blobs)
    first, second = encoded["content"]
    assert "content" not in first and len(first["content_ref"]) == 64
    assert second["content"] == "small"
    assert len(dumps(encoded)) < 500
    stored = list((tmp_path / "blobs").rglob("*.json"))
    assert len(stored) == 1
    assert message_from_json(encoded, blobs=blobs) == message
    # Equal contents share one file.
    message_to_json(Message("user", (ToolResult("c9", "x" * 5_000),)), blobs=blobs)
    assert len(list((tmp_path / "blobs").rglob("*.json"))) == 1


def test_a_blob_reference_without_blobs_or_with_a_missing_file_is_a_store_error(
    tmp_path: Path,
) -> None:
    blobs = BlobDirectory(tmp_path / "blobs", threshold=10)
    encoded = message_to_json(
        Message("user", (ToolResult("c1", "y" * 100),)), blobs=blobs
    )
    with pytest.raises(StoreError, match="blob"):
        message_from_json(encoded)
    for path in (tmp_path / "blobs").rglob("*.json"):
        path.unlink()
    with pytest.raises(StoreError, match="missing"):
        message_from_json(encoded, blobs=blobs)
    with pytest.raises(StoreError, match="malformed"):
        blobs.get("../../etc/passwd")


def test_unknown_blocks_and_roles_are_store_errors() -> None:
    with pytest.raises(StoreError, match="block type"):
        message_from_json({"role": "user", "content": [{"type": "video"}]})
    with pytest.raises(StoreError, match="role"):
        message_from_json({"role": "system", "content": "x"})


@pytest.mark.anyio
async def test_events_encode_with_their_type_and_fields() -> None:
    call = ToolCall("c1", "read", {"path": "a"})
    response = ModelResponse([Text("hi"), call], StopReason.TOOL_USE, Usage(3, 4))
    finished = RunFinished(
        CompletionReason.COMPLETED,
        "done",
        usage=Usage(1, 2),
        messages=(Message("user", "x"),),
        extra={"iterations": 2},
    )
    now = anyio.current_time()
    encoded = [
        event_to_json(ToolRunning("c1")),
        event_to_json(ToolResultReady(call, ToolResult("c1", "ok"), iteration=3)),
        event_to_json(ModelCallFinished(1, response)),
        event_to_json(finished, omit=("messages",)),
        event_to_json(finished),
    ]
    for item in encoded:
        json.loads(dumps(item))  # JSON all the way down
    running, ready, model, compact, full = encoded
    assert running["type"] == "ToolRunning" and running["call_id"] == "c1"
    assert running["at"] >= now
    assert ready["iteration"] == 3 and ready["result"]["content"] == "ok"
    assert model["response"]["stop_reason"] == "tool_use"
    assert model["response"]["content"][1] == {
        "type": "tool_call",
        "id": "c1",
        "name": "read",
        "input": {"path": "a"},
    }
    assert compact["reason"] == "completed" and "messages" not in compact
    assert full["messages"] == [{"role": "user", "content": "x"}]
    assert full["extra"] == {"iterations": 2}
