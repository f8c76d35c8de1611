"""Capture the real llama-cpp-python server's responses as test fixtures (not a test).

Run from the repository root after ``.ci/setup-extras``::

    .venv/bin/python tests/integration/capture_llama_fixtures.py

It starts the server (see `llama_server`), sends each request below with plain
httpx (no SDK, so the bytes are the server's own), and writes every response
body verbatim to ``tests/models/sdk/fixtures/llama_cpp/<name>`` plus an index,
``captures.json``, with the request, status, content type and server version.
Requests carry a ``seed`` so a rerun gives the same answers on the same build.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from llama_server import MODEL_FILE, running_server

OUT = Path(__file__).parents[1] / "models" / "sdk" / "fixtures" / "llama_cpp"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The current time in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
]
SYSTEM = {
    "role": "system",
    "content": "You are a helpful assistant. Always use the tools to answer.",
}
ASK_ADD = [SYSTEM, {"role": "user", "content": "Use the add tool to add 2 and 3."}]
AFTER_RESULT = [
    *ASK_ADD,
    {
        "role": "assistant",
        "content": "",  # llama-cpp-python rejects null content (HTTP 422)
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "5"},
]
ASK_PLAIN = [{"role": "user", "content": "What time is it in Paris? Also add 2 and 3."}]
FORCE_ADD = {"type": "function", "function": {"name": "add"}}
STREAM = {"stream": True, "stream_options": {"include_usage": True}}

CAPTURES: dict[str, dict[str, Any]] = {
    "tool_call.json": {"messages": ASK_ADD, "tool_choice": "auto"},
    "after_result.json": {"messages": AFTER_RESULT, "tool_choice": "auto"},
    "text.json": {"messages": ASK_PLAIN, "tool_choice": "auto"},
    "stream_refused.sse": {"messages": ASK_ADD, "tool_choice": "auto", **STREAM},
    "stream_forced_tool.sse": {"messages": ASK_ADD, "tool_choice": FORCE_ADD, **STREAM},
    "stream_text.sse": {"messages": ASK_PLAIN, "tool_choice": "auto", **STREAM},
    "null_content_rejected.json": {
        "messages": [*AFTER_RESULT[:2], AFTER_RESULT[2] | {"content": None}],
        "tool_choice": "auto",
    },
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {
        "server": f"llama-cpp-python {version('llama-cpp-python')}",
        "command": "python -m llama_cpp.server --model "
        f"{MODEL_FILE} --chat_format chatml-function-calling",
        "captured": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": {},
    }
    with running_server() as url:
        for name, extra in CAPTURES.items():
            body = {"model": "local", "tools": TOOLS, "max_tokens": 128, "seed": 0}
            body |= extra
            reply = httpx.post(url + "/chat/completions", json=body, timeout=600)
            (OUT / name).write_bytes(reply.content)
            index["files"][name] = {
                "request": body,
                "status": reply.status_code,
                "content_type": reply.headers.get("content-type"),
            }
            print(name, reply.status_code, len(reply.content), "bytes")
    (OUT / "captures.json").write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    main()
