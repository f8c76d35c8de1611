"""OpenAIChatModel: Chat Completions over the official `openai` SDK, streamed or whole.

Also the client for OpenAI-compatible servers (vLLM, llama.cpp server, Ollama)
through `base_url`.
"""

from __future__ import annotations

from typing import Any, final

import openai

from .._exceptions import AuthenticationError, ModelError
from ._base import ModelRequest
from ._capabilities import Provider
from ._openai_chat_convert import MaxTokensField, chat_params
from ._openai_chat_replay import chat_replay
from ._openai_chat_stream import ChatStreamMapper
from ._openai_errors import map_openai_error
from ._provider import EventMapper, ProviderModel
from ._sdk_streams import SDKStream, replay_of
from ._unexpected import WireShape, require_event_stream, whole_response
from ._warnings import WarningHandler
from ._wire_text import utf8_payload

__all__ = ["CHAT_SHAPE", "OpenAIChatModel", "build_openai_client"]

CHAT_SHAPE = WireShape("an OpenAI chat completion", "choices")
"""What every whole response of this API is (see `_unexpected`)."""


def build_openai_client(
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    given: openai.AsyncOpenAI | None,
) -> openai.AsyncOpenAI:
    """An SDK client with the SDK's retries off (ours own the policy).

    Raises `AuthenticationError` when the SDK cannot be configured (no key).
    """
    try:
        if given is not None:
            return given.with_options(max_retries=0)
        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout
        )
    except openai.OpenAIError as exc:
        raise AuthenticationError(f"cannot build the openai client: {exc}") from exc


@final
class OpenAIChatModel(ProviderModel):
    """A model behind the Chat Completions API, through the official `openai` SDK.

    Streams with ``stream_options.include_usage`` so usage (with cached
    tokens) arrives at the end. A server that refuses to stream with tools
    (llama-cpp-python's does) gets its requests with tools sent whole from the
    first refusal on, with one warning. The SDK's own retries are off: wrap the
    model in a `RetryingModel` for retries and fallback.

    Args:
        name: The model id, such as ``"gpt-4.1"`` or a local server's model name.
        api_key: The API key; None lets the SDK read ``OPENAI_API_KEY``.
        base_url: Another endpoint, such as an OpenAI-compatible server's ``/v1``.
        compatible: The server is an OpenAI-compatible one, not OpenAI: the
            capability table then sends no ``parallel_tool_calls`` unless
            `supports_parallel_tool_calls` says otherwise, the output cap
            goes in ``max_tokens``, and an assistant turn that only called
            tools is sent with content "" (llama-cpp-python rejects null).
        max_tokens_field: Overrides where the output cap goes.
        include_usage: Ask for the final usage chunk (some old servers reject it).
        stream: Stream responses (default). False sends every request whole:
            same chunks, events and transcript, but no streaming overlap.
        timeout: Seconds the SDK waits for the server (per read).
        context_window: Overrides the known-model table.
        supports_parallel_tool_calls: Overrides the capability table.
        on_warning: Receives a `toolweave.events.Warning` when the provider
            rejected the parallel flag or refused to stream with tools (inside
            an agent run it also becomes a run event; with neither, it is logged).
        client: An `openai.AsyncOpenAI` to use instead of building one; the
            model copies it with retries off and never closes the original.
    """

    _flag_name = "parallel_tool_calls"

    def __init__(
        self,
        name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        compatible: bool = False,
        max_tokens_field: MaxTokensField | None = None,
        include_usage: bool = True,
        stream: bool = True,
        timeout: float = 600.0,
        context_window: int | None = None,
        supports_parallel_tool_calls: bool | None = None,
        on_warning: WarningHandler | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self._provider: Provider = "openai-compatible" if compatible else "openai"
        super().__init__(
            name,
            stream=stream,
            context_window=context_window,
            supports_parallel_tool_calls=supports_parallel_tool_calls,
            on_warning=on_warning,
        )
        self._api_key = api_key
        self._base_url = base_url
        self._max_tokens_field: MaxTokensField = max_tokens_field or (
            "max_tokens" if compatible else "max_completion_tokens"
        )
        self._include_usage = include_usage
        self._timeout = timeout
        self._given_client = client
        self._client: openai.AsyncOpenAI | None = None

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = build_openai_client(
                self._api_key, self._base_url, self._timeout, self._given_client
            )
        return self._client

    async def _open(
        self, request: ModelRequest, *, send_flag: bool, stream: bool
    ) -> SDKStream:
        params = chat_params(
            request,
            model=self._name,
            send_flag=send_flag,
            max_tokens_field=self._max_tokens_field,
            include_usage=self._include_usage and stream,
            empty_content="" if self._provider == "openai-compatible" else None,
        )
        params = utf8_payload(params)
        completions = self._sdk().chat.completions
        if not stream:
            raw = await completions.with_raw_response.create(**params)
            completion = await whole_response(raw, CHAT_SHAPE)
            return replay_of(chat_replay, completion, self._provider)
        events: openai.AsyncStream[Any] = await completions.create(
            stream=True, **params
        )
        await require_event_stream(events.response, CHAT_SHAPE)
        return events

    def _new_mapper(self, request: ModelRequest) -> EventMapper:
        return ChatStreamMapper(tool_names=[t.name for t in request.tools])

    def _map_error(self, exc: BaseException) -> ModelError | None:
        return map_openai_error(exc)

    async def aclose(self) -> None:
        """Close the SDK client this model built (a given client is left open)."""
        client, self._client = self._client, None
        if client is not None and self._given_client is None:
            await client.close()
