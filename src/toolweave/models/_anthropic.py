"""AnthropicModel: the Messages API over the official `anthropic` SDK, streamed or whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack, final

import anthropic

from .._exceptions import AuthenticationError, MissingAPIKeyError, ModelError
from ._anthropic_convert import anthropic_params
from ._anthropic_errors import map_anthropic_error
from ._anthropic_replay import anthropic_replay
from ._anthropic_stream import AnthropicStreamMapper
from ._base import ModelRequest
from ._endpoint import checked_base_url
from ._provider import EventMapper, ProviderModel, ProviderOptions
from ._sdk_streams import SDKStream, replay_of
from ._unexpected import WireShape, require_event_stream, whole_response
from ._wire_text import utf8_payload

__all__ = ["AnthropicModel"]

MESSAGES_SHAPE = WireShape("an Anthropic message", "content")
"""What every whole response of this API is (see `_unexpected`)."""


@final
class AnthropicModel(ProviderModel):
    """A Claude model through the official `anthropic` SDK (Messages API, streaming).

    The SDK's own retries are off (``max_retries=0``): wrap the model in a
    `RetryingModel` for retries and fallback. Thinking blocks come back
    verbatim with their signatures (redacted ones with their data), and go back
    to the API unchanged. ``tool_choice.disable_parallel_tool_use`` is derived
    from `ModelRequest.parallel_tool_calls` and sent only with tools.

    Args:
        name: The model id, such as ``"claude-sonnet-4-6"``.
        api_key: The API key; None lets the SDK read ``ANTHROPIC_API_KEY`` (or
            ``ANTHROPIC_AUTH_TOKEN``, or its other credentials). With none of
            them the first request raises `MissingAPIKeyError` before it is sent.
        base_url: Another endpoint (a proxy, or the test suite's loopback
            server), without ``/v1``: the SDK adds ``/v1/messages``. None:
            ``$ANTHROPIC_BASE_URL``, else Anthropic. A URL that cannot be one is
            a `ConfigError` here.
        thinking: Passed through as the request's ``thinking`` config, such as
            ``{"type": "adaptive"}``.
        stream: Stream responses (default). False sends every request whole
            (with `timeout` as its deadline): same chunks, events and
            transcript, but no streaming overlap.
        timeout: Seconds the SDK waits for the server (per read).
        context_window: Overrides the known-model table.
        supports_parallel_tool_calls: Overrides the capability table.
        on_warning: Receives a `toolweave.events.Warning` when the provider
            rejected the parallel flag or refused to stream with tools (inside
            an agent run it also becomes a run event; with neither, it is logged).
        client: An `anthropic.AsyncAnthropic` to use instead of building one;
            the model copies it with retries off and never closes the original.
    """

    _provider = "anthropic"
    _flag_name = "disable_parallel_tool_use"

    def __init__(
        self,
        name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        thinking: Mapping[str, Any] | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        if client is None:
            checked_base_url(base_url, variable="ANTHROPIC_BASE_URL")
        super().__init__(name, **options)
        self._api_key = api_key
        self._base_url = base_url
        self._thinking = thinking
        self._given_client = client
        self._client: anthropic.AsyncAnthropic | None = None
        self._warned_temperature = False

    def _sdk(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            try:
                if self._given_client is not None:
                    self._client = self._given_client.with_options(max_retries=0)
                else:
                    self._client = anthropic.AsyncAnthropic(
                        api_key=self._api_key,
                        base_url=self._base_url,
                        max_retries=0,
                        timeout=self._timeout,
                    )
            except anthropic.AnthropicError as exc:
                raise AuthenticationError(
                    f"cannot build the anthropic client: {exc}"
                ) from exc
            if self._given_client is None and not _has_credentials(self._client):
                self._client = None
                raise MissingAPIKeyError(
                    f"ANTHROPIC_API_KEY is not set and AnthropicModel({self._name!r})"
                    " was given no api_key: set the variable (or ANTHROPIC_AUTH_TOKEN)"
                    " or pass api_key=; no request was sent",
                    variable="ANTHROPIC_API_KEY",
                )
        return self._client

    async def _open(
        self, request: ModelRequest, *, send_flag: bool, stream: bool
    ) -> SDKStream:
        if request.temperature is not None and not self._warned_temperature:
            self._warned_temperature = True
            self._warn(f"{self._name}: the Messages API takes no temperature; ignored")
        params = anthropic_params(
            request, model=self._name, send_flag=send_flag, thinking=self._thinking
        )
        params = utf8_payload(params)
        messages = self._sdk().messages
        if not stream:
            # An explicit timeout: the SDK refuses a whole request it guesses
            # might take over ten minutes unless the caller sets the deadline.
            raw = await messages.with_raw_response.create(
                **params, timeout=self._timeout
            )
            message = await whole_response(raw, MESSAGES_SHAPE)
            return replay_of(anthropic_replay, message, self._provider)
        events: anthropic.AsyncStream[Any] = await messages.create(
            stream=True, **params
        )
        await require_event_stream(events.response, MESSAGES_SHAPE)
        return events

    def _new_mapper(self, request: ModelRequest) -> EventMapper:
        return AnthropicStreamMapper(tool_names=[t.name for t in request.tools])

    def _map_error(self, exc: BaseException) -> ModelError | None:
        return map_anthropic_error(exc)

    async def aclose(self) -> None:
        """Close the SDK client this model built (a given client is left open)."""
        client, self._client = self._client, None
        if client is not None and self._given_client is None:
            await client.close()


def _has_credentials(client: anthropic.AsyncAnthropic) -> bool:
    """Whether the SDK found any way to authenticate (else it fails each request).

    Without a key, a token, a credentials provider (a profile, workload
    identity) or an auth header of its own, the SDK raises a bare `TypeError`
    ("Could not resolve authentication method") while building each request.
    """
    if client.api_key or client.auth_token:
        return True
    if getattr(client, "credentials", None) is not None:
        return True
    headers = client.default_headers
    return bool(headers.get("X-Api-Key") or headers.get("Authorization"))
