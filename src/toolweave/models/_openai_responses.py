"""OpenAIResponsesModel: the Responses API over the official `openai` SDK, streamed or whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack, final

import openai

from .._exceptions import ModelError
from ._base import ModelRequest
from ._capabilities import is_reasoning_family
from ._endpoint import checked_base_url
from ._openai_chat import build_openai_client
from ._openai_errors import map_openai_error
from ._openai_responses_convert import responses_params
from ._openai_responses_replay import responses_replay
from ._openai_responses_stream import ResponsesStreamMapper
from ._provider import EventMapper, ProviderModel, ProviderOptions
from ._sdk_streams import SDKStream, replay_of
from ._unexpected import WireShape, require_event_stream, whole_response
from ._wire_text import utf8_payload

__all__ = ["OpenAIResponsesModel"]

RESPONSES_SHAPE = WireShape("an OpenAI Responses API response", "output")
"""What every whole response of this API is (see `_unexpected`)."""


@final
class OpenAIResponsesModel(ProviderModel):
    """A model behind the Responses API, through the official `openai` SDK.

    Stateless: every request carries the whole conversation (``store=False``).
    Reasoning items come back as `Thinking` blocks with their id and encrypted
    content, and are passed back unchanged on the next request, unless they
    cannot be: without `store`, one that has no encrypted content is left out
    (its id names nothing OpenAI kept), and so is one whose following item was
    a hosted tool's (web search …), which the transcript does not hold.
    Function calls and messages keep their item ids (`ToolCall.provider_id`,
    `Text.provider_id`); the ones after a reasoning item go back with their
    ids exactly when that reasoning item goes back, which is how the API
    pairs them. The SDK's own retries are off: wrap the model in a
    `RetryingModel`.

    Args:
        name: The model id, such as ``"gpt-5"`` or ``"o4-mini"``.
        api_key: The API key; None lets the SDK read ``OPENAI_API_KEY``.
        base_url: Another endpoint (None: ``$OPENAI_BASE_URL``, else OpenAI).
            A URL that cannot be one is a `ConfigError` here.
        reasoning: Passed through as the ``reasoning`` config, such as
            ``{"effort": "medium", "summary": "auto"}``.
        include_encrypted_reasoning: Ask for encrypted reasoning content (needed
            to pass reasoning back statelessly); default: for reasoning families.
        store: Let OpenAI store the response.
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

    _provider = "openai"
    _flag_name = "parallel_tool_calls"

    def __init__(
        self,
        name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        reasoning: Mapping[str, Any] | None = None,
        include_encrypted_reasoning: bool | None = None,
        store: bool = False,
        client: openai.AsyncOpenAI | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        if client is None:
            checked_base_url(base_url, variable="OPENAI_BASE_URL")
        super().__init__(name, **options)
        self._api_key = api_key
        self._base_url = base_url
        self._reasoning = reasoning
        self._include_encrypted = (
            is_reasoning_family(name)
            if include_encrypted_reasoning is None
            else include_encrypted_reasoning
        )
        self._store = store
        self._given_client = client
        self._client: openai.AsyncOpenAI | None = None
        self._warned_stop = False

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = build_openai_client(
                self._api_key,
                self._base_url,
                self._timeout,
                self._given_client,
                owner=f"OpenAIResponsesModel({self._name!r})",
            )
        return self._client

    async def _open(
        self, request: ModelRequest, *, send_flag: bool, stream: bool
    ) -> SDKStream:
        if request.stop_sequences and not self._warned_stop:
            self._warned_stop = True
            self._warn(
                f"{self._name}: the Responses API has no stop sequences; ignored"
            )
        params = responses_params(
            request,
            model=self._name,
            send_flag=send_flag,
            reasoning=self._reasoning,
            include_encrypted_reasoning=self._include_encrypted,
            store=self._store,
        )
        params = utf8_payload(params)
        responses = self._sdk().responses
        if not stream:
            raw = await responses.with_raw_response.create(**params)
            response = await whole_response(raw, RESPONSES_SHAPE)
            return replay_of(responses_replay, response, self._provider)
        events: openai.AsyncStream[Any] = await responses.create(stream=True, **params)
        await require_event_stream(events.response, RESPONSES_SHAPE)
        return events

    def _new_mapper(self, request: ModelRequest) -> EventMapper:
        return ResponsesStreamMapper(tool_names=[t.name for t in request.tools])

    def _map_error(self, exc: BaseException) -> ModelError | None:
        return map_openai_error(exc)

    async def aclose(self) -> None:
        """Close the SDK client this model built (a given client is left open)."""
        client, self._client = self._client, None
        if client is not None and self._given_client is None:
            await client.close()
