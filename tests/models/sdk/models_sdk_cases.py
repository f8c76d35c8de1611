"""The three providers as conformance cases: how to build each, and what it should yield."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2
import openai
from models_loopback import LoopbackServer

from toolweave import ModelServerError, OverloadedError
from toolweave.messages import StopReason, Thinking
from toolweave.models import (
    AnthropicModel,
    Model,
    OpenAIChatModel,
    OpenAIResponsesModel,
)


def _anthropic_error(kind: str, message: str) -> dict[str, Any]:
    if kind == "prompt_too_long":  # Anthropic says it in the message only
        kind = "invalid_request_error"
    return {"type": "error", "error": {"type": kind, "message": message}}


def _openai_error(kind: str, message: str) -> dict[str, Any]:
    code = {"rate_limit_error": "rate_limit_exceeded"}.get(kind)
    if kind == "prompt_too_long":
        code = "context_length_exceeded"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# Building an SDK client builds a TLS context (~0.1 s); the loopback server is
# plain HTTP, so the tests share one context instead of paying that per test.
_TLS = ssl.create_default_context()


def sdk_client(case_id: str, server: LoopbackServer) -> Any:
    """An official SDK client for `server`, sharing the test TLS context."""
    http = httpx2.AsyncClient(verify=_TLS)
    if case_id == "anthropic":
        return anthropic.AsyncAnthropic(
            api_key="test-key", base_url=server.url, http_client=http
        )
    return openai.AsyncOpenAI(
        api_key="test-key", base_url=server.url + "/v1", http_client=http
    )


@dataclass(frozen=True)
class Case:
    id: str
    fixtures: str
    build: Callable[..., Model]
    path: str
    flag_name: str
    error_body: Callable[[str, str], dict[str, Any]]
    stop_cases: list[tuple[dict[str, str], StopReason, str]]
    thinking: tuple[Thinking, ...]
    stream_error: type[Exception]
    # How many events to send so that the first tool call is complete and the
    # second has not (Chat: the second has just started, which closes the first).
    first_tool_events: Callable[[list[str]], int]
    flag_on_wire: Callable[[dict[str, Any]], Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def model(
        self, server: LoopbackServer, name: str | None = None, **options: Any
    ) -> Model:
        """A model that builds its own SDK client from api_key/base_url."""
        return self.build(server, name, **options)

    @asynccontextmanager
    async def open(
        self, server: LoopbackServer, name: str | None = None, **options: Any
    ) -> AsyncIterator[Model]:
        """A model over a given SDK client (the fast path for most tests)."""
        client = sdk_client(self.id, server)
        model = self.build(server, name, client=client, **options)
        try:
            yield model
        finally:
            await model.aclose()
            await client.close()


def _after_first(marker: str, *, include: bool = True) -> Callable[[list[str]], int]:
    def count(events: list[str]) -> int:
        for index, event in enumerate(events):
            if marker in event:
                return index + 1 if include else index
        raise AssertionError(f"marker {marker!r} not in fixture")

    return count


def _anthropic_flag(body: dict[str, Any]) -> Any:
    return body.get("tool_choice", {}).get("disable_parallel_tool_use")


ANTHROPIC = Case(
    id="anthropic",
    fixtures="anthropic",
    build=lambda server, name, **kw: AnthropicModel(
        name or "claude-sonnet-4-6", api_key="test-key", base_url=server.url, **kw
    ),
    path="/v1/messages",
    flag_name="disable_parallel_tool_use",
    error_body=_anthropic_error,
    stop_cases=[
        ({"stop_reason": "end_turn"}, StopReason.END_TURN, "end_turn"),
        ({"stop_reason": "tool_use"}, StopReason.TOOL_USE, "tool_use"),
        ({"stop_reason": "max_tokens"}, StopReason.MAX_TOKENS, "max_tokens"),
        ({"stop_reason": "stop_sequence"}, StopReason.STOP_SEQUENCE, "stop_sequence"),
        ({"stop_reason": "refusal"}, StopReason.REFUSAL, "refusal"),
        (
            {"stop_reason": "model_context_window_exceeded"},
            StopReason.MAX_TOKENS,
            "model_context_window_exceeded",
        ),
        ({"stop_reason": "pause_turn"}, StopReason.UNKNOWN, "pause_turn"),
    ],
    thinking=(
        Thinking(
            "I should greet.", "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
        ),
        Thinking(
            "",
            redacted_data="EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
        ),
    ),
    stream_error=OverloadedError,
    first_tool_events=_after_first('"content_block_stop","index":1'),
    flag_on_wire=_anthropic_flag,
)

OPENAI_CHAT = Case(
    id="openai_chat",
    fixtures="openai_chat",
    build=lambda server, name, **kw: OpenAIChatModel(
        name or "gpt-4.1", api_key="test-key", base_url=server.url + "/v1", **kw
    ),
    path="/v1/chat/completions",
    flag_name="parallel_tool_calls",
    error_body=_openai_error,
    stop_cases=[
        ({"stop_reason": "stop"}, StopReason.END_TURN, "stop"),
        ({"stop_reason": "tool_calls"}, StopReason.TOOL_USE, "tool_calls"),
        ({"stop_reason": "function_call"}, StopReason.TOOL_USE, "function_call"),
        ({"stop_reason": "length"}, StopReason.MAX_TOKENS, "length"),
        ({"stop_reason": "content_filter"}, StopReason.REFUSAL, "content_filter"),
        ({"stop_reason": "eos_token"}, StopReason.UNKNOWN, "eos_token"),
    ],
    thinking=(Thinking("I should greet."),),
    stream_error=ModelServerError,
    first_tool_events=_after_first('"index":1,"id":"call_01B"'),
    flag_on_wire=lambda body: body.get("parallel_tool_calls"),
)

_DONE = "response.completed"
_INCOMPLETE = "response.incomplete"

OPENAI_RESPONSES = Case(
    id="openai_responses",
    fixtures="openai_responses",
    build=lambda server, name, **kw: OpenAIResponsesModel(
        name or "gpt-5", api_key="test-key", base_url=server.url + "/v1", **kw
    ),
    path="/v1/responses",
    flag_name="parallel_tool_calls",
    error_body=_openai_error,
    stop_cases=[
        (
            {"final_event": _DONE, "status": "completed", "incomplete_details": "null"},
            StopReason.END_TURN,
            "completed",
        ),
        (
            {
                "final_event": _INCOMPLETE,
                "status": "incomplete",
                "incomplete_details": '{"reason":"max_output_tokens"}',
            },
            StopReason.MAX_TOKENS,
            "max_output_tokens",
        ),
        (
            {
                "final_event": _INCOMPLETE,
                "status": "incomplete",
                "incomplete_details": '{"reason":"content_filter"}',
            },
            StopReason.REFUSAL,
            "content_filter",
        ),
        (
            {
                "final_event": _INCOMPLETE,
                "status": "incomplete",
                "incomplete_details": '{"reason":"max_messages"}',
            },
            StopReason.UNKNOWN,
            "max_messages",
        ),
        (
            {"final_event": _DONE, "status": "cancelled", "incomplete_details": "null"},
            StopReason.UNKNOWN,
            "cancelled",
        ),
    ],
    thinking=(
        Thinking(
            "I should greet.",
            provider_id="rs_01R",
            encrypted_content="gAAAAABoFull-encrypted-reasoning==",
        ),
    ),
    stream_error=ModelServerError,
    first_tool_events=_after_first(
        '"item":{"id":"fc_01A","type":"function_call","status":"completed"'
    ),
    flag_on_wire=lambda body: body.get("parallel_tool_calls"),
)

CASES = [ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES]
CASE_IDS = [case.id for case in CASES]
