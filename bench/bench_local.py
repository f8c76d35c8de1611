"""A real local model server (issue 14): llama-cpp-python on SmolLM2-135M-Instruct.

Starts ``python -m llama_cpp.server`` (installed by .ci/setup-extras; skipped
with a note when it is missing) and measures, interleaved, median of N runs:

  first tool start   request sent -> the first complete tool call in hand (the
                     moment the scheduler may start a SAFE tool), for
                     streamed      a forced tool call, streamed (this server
                                   streams only forced tool calls)
                     whole         the same request sent whole (stream=False)
                     fallback      an automatic tool choice on a fresh streaming
                                   model: the refused stream, then the whole request
  overhead           toolweave's own time per request as a share of the server's:
                     end to end    (model.complete - raw httpx POST of the same body)
                                   / raw POST, whole requests, interleaved
                     mapping       replaying the captured response through our
                                   mapper + aggregator, / the raw POST time

Run: python bench/bench_local.py [--runs N]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

from toolweave.messages import Message
from toolweave.models import (
    ChunkAggregator,
    ModelRequest,
    OpenAIChatModel,
    ToolDefinition,
    ToolUseReady,
)
from toolweave.models._openai_chat_convert import chat_params
from toolweave.models._openai_chat_replay import chat_replay
from toolweave.models._openai_chat_stream import ChatStreamMapper

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "integration"))
from llama_server import missing, running_server  # noqa: E402

ADD = ToolDefinition(
    "add",
    "Add two integers",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
GET_TIME = ToolDefinition(
    "get_time",
    "The current time in a city",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
ASK = [Message("user", "Use the add tool to add 2 and 3.")]
SYSTEM = "You are a helpful assistant. Always use the tools to answer."


def request(tool_choice: str = "auto") -> ModelRequest:
    return ModelRequest(
        ASK,
        system=SYSTEM,
        tools=(GET_TIME, ADD),
        tool_choice=tool_choice,
        max_tokens=32,
        temperature=0.0,
    )


def model(url: str, *, stream: bool = True) -> OpenAIChatModel:
    return OpenAIChatModel(
        "local",
        "not-needed",
        url,
        compatible=True,
        stream=stream,
        on_warning=lambda event: None,
    )


async def first_tool(chat: OpenAIChatModel, req: ModelRequest) -> float:
    """Seconds from sending `req` to its first complete tool call (the rest drained)."""
    started = time.perf_counter()
    seen: float | None = None
    async for chunk in chat.stream(req):
        if seen is None and isinstance(chunk, ToolUseReady):
            seen = time.perf_counter() - started
    if seen is None:
        raise RuntimeError("the model answered without a tool call")
    return seen


async def raw_post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    reply = await client.post(url + "/chat/completions", json=body)
    reply.raise_for_status()
    return time.perf_counter() - started


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


def mapping_seconds(completion_body: dict[str, Any], repeats: int = 2000) -> float:
    """Per-request CPU cost of our mapping of one captured whole response."""
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(completion_body)
    names = [ADD.name, GET_TIME.name]
    started = time.perf_counter()
    for _ in range(repeats):
        mapper = ChatStreamMapper(tool_names=names)
        aggregator = ChunkAggregator()
        for event in chat_replay(completion):
            for chunk in mapper.feed(event):
                aggregator.add(chunk)
        for chunk in mapper.finish():
            aggregator.add(chunk)
        aggregator.response()
    return (time.perf_counter() - started) / repeats


async def measure(url: str, runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {
        k: [] for k in ("streamed", "whole", "fallback", "raw", "ours")
    }
    body = chat_params(
        request(),
        model="local",
        send_flag=False,
        max_tokens_field="max_tokens",
        include_usage=False,
        empty_content="",
    )
    streaming, whole = model(url), model(url, stream=False)
    async with httpx.AsyncClient(timeout=600) as client:
        await raw_post(client, url, body)  # warm the server's prompt cache
        for _ in range(runs):
            out["streamed"].append(await first_tool(streaming, request("add")))
            out["whole"].append(await first_tool(whole, request("add")))
            fresh = model(url)
            out["fallback"].append(await first_tool(fresh, request()))
            await fresh.aclose()
            out["raw"].append(await raw_post(client, url, body))
            out["ours"].append(await timed(lambda: whole.complete(request())))
        sample = (await client.post(url + "/chat/completions", json=body)).json()
    await streaming.aclose()
    await whole.aclose()
    out["mapping"] = [mapping_seconds(sample)]
    return out


def report(results: dict[str, list[float]]) -> None:
    med = {k: statistics.median(v) for k, v in results.items()}
    print("request -> first tool call in hand (median, s):")
    print(
        f"  streamed {med['streamed']:.3f}   whole {med['whole']:.3f}   "
        f"streamed/whole {med['streamed'] / med['whole']:.2f}"
    )
    print(
        f"  fallback (refused stream + whole) {med['fallback']:.3f}   "
        f"fallback/whole {med['fallback'] / med['whole']:.2f}"
    )
    overhead = (med["ours"] - med["raw"]) / med["raw"]
    print("toolweave's own time per whole request, as a share of the server's:")
    print(
        f"  end to end (ours - raw) / raw   {overhead:+.1%}   "
        f"(raw {med['raw']:.3f} s, ours {med['ours']:.3f} s; noise-dominated)"
    )
    print(
        f"  mapping / raw                   {med['mapping'] / med['raw']:.3%}   "
        f"({med['mapping'] * 1e6:.0f} us per response)"
    )


def main() -> int:
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    reason = missing()
    if reason is not None:
        print(f"skipped: {reason}")
        return 0
    with running_server() as url:
        results = anyio.run(measure, url, runs)
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
