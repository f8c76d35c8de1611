"""What the real-SDK integration tests share: models on the loopback server, wire reading.

Each test scripts `models_loopback.LoopbackServer` with captured provider streams,
drives the official SDK through a toolweave model, and reads back the request
bodies the SDK sent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import toolweave as tw
from toolweave.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel

sys.path.insert(0, str(Path(__file__).parents[1] / "models" / "sdk"))
from models_loopback import SseReply, fixture

PROVIDERS = ["anthropic", "openai_chat", "openai_responses"]

ORIGINAL_IDS = {
    "anthropic": ("toolu_01A", "toolu_01B", "toolu_01C"),
    "openai_chat": ("call_01A", "call_01B", "call_01C"),
    "openai_responses": ("call_01A", "call_01B", "call_01C"),
}
"""The tool-call ids of each provider's captured ``tools`` stream."""


def tools_reply_with_ids(provider: str, new_id: str) -> SseReply:
    """The captured ``tools`` stream with every tool-call id replaced by `new_id`."""
    raw = fixture(provider, "tools").raw
    for original in ORIGINAL_IDS[provider]:
        raw = raw.replace(f'"{original}"', f'"{new_id}"')
    return SseReply(raw)


def sdk_model(provider: str, url: str) -> tw.models.Model:
    """The toolweave model for `provider`, pointed at the loopback server at `url`."""
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-6", api_key="test-key", base_url=url)
    if provider == "openai_chat":
        return OpenAIChatModel("gpt-4.1", api_key="test-key", base_url=url + "/v1")
    return OpenAIResponsesModel("gpt-5", api_key="test-key", base_url=url + "/v1")


def wire_calls_and_results(
    provider: str, body: Any
) -> tuple[list[str], list[tuple[str, str]]]:
    """(tool-call ids, (result id, result text) pairs) of one request body, in order."""
    if provider == "anthropic":
        blocks = [
            b
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
        ]
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        results = [
            (b["tool_use_id"], str(b["content"]))
            for b in blocks
            if b["type"] == "tool_result"
        ]
        return calls, results
    if provider == "openai_chat":
        calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
        results = [
            (m["tool_call_id"], str(m["content"]))
            for m in body["messages"]
            if m["role"] == "tool"
        ]
        return calls, results
    items = body["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    results = [
        (i["call_id"], str(i["output"]))
        for i in items
        if i.get("type") == "function_call_output"
    ]
    return calls, results
