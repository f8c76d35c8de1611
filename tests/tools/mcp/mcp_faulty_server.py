"""A small real MCP server over stdio that misbehaves on request (raw JSON-RPC lines).

Run as ``python mcp_faulty_server.py LOG [--start MODE] [--exit-after N]
[--refuse-if PATH]``.
It speaks newline-delimited JSON-RPC on stdin/stdout, written by hand so that it
can write what the SDK's server never would: bytes that are not UTF-8, answers
with a wrong id or a result that is not an object, garbage, no answer at all.
Each tool call is appended to LOG as ``<pid> <tool> <text>`` *before* the
server acts on it: the proof that the call reached the server (its "effects").

``--start``: ``exit`` (exit 3 before answering initialize), ``hang`` (never
answer it), ``wrong-id`` (answer it with another id), ``garbage`` (answer it
with a line that is not JSON). ``--exit-after N``: exit once N calls have been
answered, while idle. ``--refuse-if``: exit 3 at start while PATH exists.

Tools (each takes ``text``):
- ``echo``: answers ``echo: <text>``.
- ``bad_bytes``: a line of non-UTF-8 bytes, then the answer.
- ``bad_byte_in_answer``: the answer itself carries a raw 0xFF in its text.
- ``noise``: a line that is not JSON, then the answer.
- ``garbage``: a line that is not JSON instead of the answer.
- ``wrong_id``: the answer, under an id no request has.
- ``null_id_error``: an error with ``id: null`` instead of the answer.
- ``non_object``: a response whose ``result`` is a string.
- ``not_a_result``: an object result that is not a CallToolResult.
- ``stall``: never answers this call (the server goes on serving others).
- ``freeze``: the whole server stops (no answer to anything, stdin unread).
- ``crash``: the server exits mid-call.
- ``crash_keep_stdout``: the server exits mid-call, leaving a child that holds
  its stdout open (so the client sees no end of stream); the child's pid is
  logged as ``child <pid>``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from typing import Any

TOOLS = (
    "echo",
    "bad_bytes",
    "bad_byte_in_answer",
    "noise",
    "garbage",
    "wrong_id",
    "null_id_error",
    "non_object",
    "not_a_result",
    "stall",
    "freeze",
    "crash",
    "crash_keep_stdout",
)

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}

out = sys.stdout.buffer


def write_line(data: bytes) -> None:
    out.write(data + b"\n")
    out.flush()


def send(message: dict[str, Any]) -> None:
    write_line(json.dumps(message).encode())


def answer(request_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def log(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")


def call_tool(request_id: Any, name: str, text: str, log_path: str) -> bool:
    """Act on one call; False when it was left unanswered."""
    log(log_path, f"{os.getpid()} {name} {text}")
    reply = text_result(f"{name}: {text}")
    if name == "echo":
        answer(request_id, reply)
    elif name == "bad_bytes":
        write_line(b"\xff\xfe\xfd not UTF-8 \x80\x81")
        answer(request_id, reply)
    elif name == "bad_byte_in_answer":
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": reply})
        write_line(line.encode().replace(b"bad_byte_in_answer:", b"bad\xffbyte:"))
    elif name == "noise":
        write_line(b"server says: hello, this is not JSON")
        answer(request_id, reply)
    elif name == "garbage":
        write_line(b"}{ not JSON at all")
        return False
    elif name == "wrong_id":
        wrong = request_id + 1000 if isinstance(request_id, int) else f"x{request_id}"
        answer(wrong, reply)
    elif name == "null_id_error":
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "?"}})
    elif name == "non_object":
        answer(request_id, "oops, not an object")
    elif name == "not_a_result":
        answer(request_id, {"content": "not a list of blocks"})
    elif name == "stall":
        return False
    elif name == "freeze":
        select.select([], [], [], 120)  # the client's shutdown kills it long before
        os._exit(0)
    elif name == "crash":
        os._exit(1)
    elif name == "crash_keep_stdout":
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            stdin=subprocess.DEVNULL,
        )
        log(log_path, f"child {child.pid}")
        os._exit(1)
    else:
        send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "error": {"code": -32602, "message": f"no tool {name}"},
            }
        )
    return True


def main() -> None:
    args = sys.argv[1:]
    log_path = args[0]
    start = args[args.index("--start") + 1] if "--start" in args else None
    exit_after = (
        int(args[args.index("--exit-after") + 1]) if "--exit-after" in args else None
    )
    refuse_if = args[args.index("--refuse-if") + 1] if "--refuse-if" in args else None
    if start == "exit" or (refuse_if is not None and os.path.exists(refuse_if)):
        sys.exit(3)
    answered = 0
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize":
            if start == "hang":
                continue
            if start == "garbage":
                write_line(b"<html>not an MCP server</html>")
                continue
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty", "version": "1"},
            }
            answer(request_id + 1000 if start == "wrong-id" else request_id, result)
        elif method == "tools/list":
            tools = [
                {
                    "name": name,
                    "description": f"the {name} misbehaviour",
                    "inputSchema": SCHEMA,
                    "annotations": {"readOnlyHint": True, "destructiveHint": False},
                }
                for name in TOOLS
            ]
            answer(request_id, {"tools": tools})
        elif method == "ping":
            answer(request_id, {})
        elif method == "tools/call":
            params = message["params"]
            text = params.get("arguments", {}).get("text", "")
            if call_tool(request_id, params["name"], text, log_path):
                answered += 1
            if exit_after is not None and answered >= exit_after:
                os._exit(0)
        # notifications (initialized, cancelled) need no answer


if __name__ == "__main__":
    main()
