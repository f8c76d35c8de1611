"""Streaming overhead benchmark (issue 4). One command, ratios side by side.

For each provider, a 2,000-event stream (1,500 text deltas, then one tool call
whose arguments arrive in ~500 pieces) is served over loopback HTTP by a server
in a separate process, and received by the official SDK:

  sdk      the SDK alone receiving the stream: HTTP, SSE decoding, JSON, its typed events
  ours     the same stream through our Model (SDK + mapping to neutral chunks +
           ChunkAggregator), i.e. ``model.complete(request)``
  mapping  our mapper + ChunkAggregator alone, fed the SDK's events recorded from a run

and prints two ratios, both against ``sdk`` in the same run:

  (ours - sdk) / sdk    end to end, best of N interleaved runs (noisy on a busy box)
  mapping / sdk         the parsing and aggregating we add, measured directly

Target: both <= 10 %. Exit status 1 if ``mapping / sdk`` exceeds it.

Run: python bench/bench_stream.py [--runs N]
"""

from __future__ import annotations

import http.server
import itertools
import json
import multiprocessing
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import anthropic
import anyio
import openai

from toolweave.messages import Message
from toolweave.models import (
    AnthropicModel,
    ChunkAggregator,
    Model,
    ModelRequest,
    OpenAIChatModel,
    OpenAIResponsesModel,
)
from toolweave.models._anthropic_convert import anthropic_params
from toolweave.models._anthropic_stream import AnthropicStreamMapper
from toolweave.models._openai_chat_convert import chat_params
from toolweave.models._openai_chat_stream import ChatStreamMapper
from toolweave.models._openai_responses_convert import responses_params
from toolweave.models._openai_responses_stream import ResponsesStreamMapper

EVENTS = 2000
TEXT_DELTAS = 1500
TARGET = 0.10


def _sse(event: str | None, data: dict[str, Any]) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n"


def _args(pieces: int) -> list[str]:
    """A tool call's JSON arguments cut into exactly `pieces` deltas."""
    text = json.dumps({"path": "src/app.py", "content": "x = 1\n" * 600})
    bounds = [len(text) * i // pieces for i in range(pieces + 1)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def anthropic_stream() -> str:
    out = [
        _sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_b",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        _sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    delta = {"type": "content_block_delta", "index": 0}
    out += [
        _sse(
            "content_block_delta",
            delta | {"delta": {"type": "text_delta", "text": f"word{i} "}},
        )
        for i in range(TEXT_DELTAS)
    ]
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    tool = {"type": "tool_use", "id": "toolu_b", "name": "write", "input": {}}
    out.append(
        _sse(
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": tool},
        )
    )
    delta = {"type": "content_block_delta", "index": 1}
    out += [
        _sse(
            "content_block_delta",
            delta | {"delta": {"type": "input_json_delta", "partial_json": p}},
        )
        for p in _args(EVENTS - TEXT_DELTAS - 7)  # 7 framing events
    ]
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 2000},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


def chat_stream() -> str:
    base = {
        "id": "chatcmpl-b",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4.1",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return _sse(None, base | {"choices": [choice]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": f"word{i} "}) for i in range(TEXT_DELTAS)]
    call = {
        "index": 0,
        "id": "call_b",
        "type": "function",
        "function": {"name": "write", "arguments": ""},
    }
    out.append(chunk({"tool_calls": [call]}))
    pieces = _args(EVENTS - TEXT_DELTAS - 4)  # 4 framing chunks, [DONE] aside
    out += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})
        for p in pieces
    ]
    out.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 10, "completion_tokens": 2000, "total_tokens": 2010}
    out.append(_sse(None, base | {"choices": [], "usage": usage}))
    return "".join(out) + "data: [DONE]\n\n"


def responses_stream() -> str:
    response = {
        "id": "resp_b",
        "object": "response",
        "status": "in_progress",
        "model": "gpt-5",
        "output": [],
    }
    out = [_sse("response.created", {"type": "response.created", "response": response})]
    item = {"id": "msg_b", "type": "message", "role": "assistant", "content": []}
    out.append(
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
    )
    text = {
        "type": "response.output_text.delta",
        "item_id": "msg_b",
        "output_index": 0,
        "content_index": 0,
    }
    out += [
        _sse("response.output_text.delta", text | {"delta": f"word{i} "})
        for i in range(TEXT_DELTAS)
    ]
    call = {
        "id": "fc_b",
        "type": "function_call",
        "call_id": "call_b",
        "name": "write",
        "arguments": "",
    }
    out.append(
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 1, "item": call},
        )
    )
    args = {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_b",
        "output_index": 1,
    }
    pieces = _args(EVENTS - TEXT_DELTAS - 5)  # 5 framing events
    kind = "response.function_call_arguments.delta"
    out += [_sse(kind, args | {"delta": p}) for p in pieces]
    done = call | {"arguments": "".join(pieces), "status": "completed"}
    out.append(
        _sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 1, "item": done},
        )
    )
    final = response | {
        "status": "completed",
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 2000,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2010,
        },
    }
    out.append(
        _sse("response.completed", {"type": "response.completed", "response": final})
    )
    return "".join(out)


STREAMS = {
    "/v1/messages": anthropic_stream,
    "/v1/chat/completions": chat_stream,
    "/v1/responses": responses_stream,
}


def _serve(port_out: Any) -> None:
    bodies = {path: build().encode() for path, build in STREAMS.items()}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            body = bodies[self.path]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_out.put(server.server_address[1])
    server.serve_forever()


class Provider:
    def __init__(
        self,
        name: str,
        path: str,
        sdk: Any,
        open_raw: Callable[[Any], Any],
        model: Model,
        mapper: Callable[[], Any],
    ) -> None:
        self.name, self.path, self.sdk, self.open_raw = name, path, sdk, open_raw
        self.model, self.mapper = model, mapper


REQUEST = ModelRequest([Message("user", "write the file")])
# The SDK-only side sends exactly the request our models send.
ANTHROPIC_PARAMS = anthropic_params(REQUEST, model="claude-sonnet-4-6", send_flag=False)
CHAT_PARAMS = chat_params(REQUEST, model="gpt-4.1", send_flag=False)
RESPONSES_PARAMS = responses_params(
    REQUEST, model="gpt-5", send_flag=False, include_encrypted_reasoning=True
)


def providers(url: str) -> list[Provider]:
    a = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
    o = openai.AsyncOpenAI(api_key="k", base_url=url + "/v1", max_retries=0)
    return [
        Provider(
            "anthropic",
            "/v1/messages",
            a,
            lambda c: c.messages.create(stream=True, **ANTHROPIC_PARAMS),
            AnthropicModel("claude-sonnet-4-6", client=a),
            AnthropicStreamMapper,
        ),
        Provider(
            "openai chat",
            "/v1/chat/completions",
            o,
            lambda c: c.chat.completions.create(stream=True, **CHAT_PARAMS),
            OpenAIChatModel("gpt-4.1", client=o),
            ChatStreamMapper,
        ),
        Provider(
            "openai responses",
            "/v1/responses",
            o,
            lambda c: c.responses.create(stream=True, **RESPONSES_PARAMS),
            OpenAIResponsesModel("gpt-5", client=o),
            ResponsesStreamMapper,
        ),
    ]


async def sdk_only(p: Provider) -> float:
    start = time.perf_counter()
    stream = await p.open_raw(p.sdk)
    async for _ in stream:
        pass
    return time.perf_counter() - start


async def record(p: Provider) -> list[Any]:
    stream = await p.open_raw(p.sdk)
    return [event async for event in stream]


async def ours(p: Provider) -> float:
    start = time.perf_counter()
    response = await p.model.complete(REQUEST)
    elapsed = time.perf_counter() - start
    assert response.text
    assert len(response.tool_calls) == 1
    return elapsed


def mapping_only(p: Provider, events: list[Any]) -> float:
    start = time.perf_counter()
    mapper, aggregator = p.mapper(), ChunkAggregator()
    for event in events:
        for chunk in mapper.feed(event):
            aggregator.add(chunk)
    for chunk in mapper.finish():
        aggregator.add(chunk)
    aggregator.response()
    return time.perf_counter() - start


async def measure(url: str, runs: int) -> bool:
    ok = True
    print(
        f"{'provider':18} {'events':>6} {'sdk ms':>8} {'ours ms':>8} {'map ms':>7} "
        f"{'(ours-sdk)/sdk':>15} {'map/sdk':>8}"
    )
    for p in providers(url):
        for _ in range(3):  # warm up: connections, imports, caches
            await sdk_only(p)
            await ours(p)
        events = await record(p)
        assert len(events) == EVENTS, len(events)
        sdk_times, our_times, map_times = [], [], []
        for _ in range(runs):  # interleaved, so drift hits both sides alike
            sdk_times.append(await sdk_only(p))
            our_times.append(await ours(p))
            map_times.append(mapping_only(p, events))
        # Best of N, as timeit does: noise on a shared box only ever adds time.
        sdk, mine, mapped = (min(t) for t in (sdk_times, our_times, map_times))
        end_to_end, direct = (mine - sdk) / sdk, mapped / sdk
        ok &= direct <= TARGET
        print(
            f"{p.name:18} {len(events):>6} {sdk * 1e3:>8.1f} {mine * 1e3:>8.1f} "
            f"{mapped * 1e3:>7.2f} {end_to_end:>14.1%} {direct:>8.1%}"
        )
    await providers(url)[0].sdk.close()
    print(
        f"target: parsing + aggregating <= {TARGET:.0%} of the SDK's own receive time "
        f"-> {'met' if ok else 'NOT met'}"
    )
    return ok


def main() -> int:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 15
    ports: Any = multiprocessing.get_context("fork").Queue()
    server = multiprocessing.get_context("fork").Process(
        target=_serve, args=(ports,), daemon=True
    )
    server.start()
    try:
        url = f"http://127.0.0.1:{ports.get(timeout=10)}"
        ok = anyio.run(measure, url, runs)
    finally:
        server.terminate()
        server.join()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
