"""OpenAIChatModel: Chat Completions over the official `openai` SDK, streamed or whole.

Also the client for OpenAI-compatible servers (vLLM, llama.cpp server, Ollama)
through `base_url`.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal, Unpack, final
from urllib.parse import urlsplit

import openai

from .._exceptions import AuthenticationError, MissingAPIKeyError, ModelError
from ._base import ModelRequest
from ._capabilities import Provider
from ._endpoint import checked_base_url
from ._openai_chat_convert import MaxTokensField, chat_params
from ._openai_chat_replay import chat_replay
from ._openai_chat_stream import ChatStreamMapper
from ._openai_errors import map_openai_error
from ._provider import EventMapper, ProviderModel, ProviderOptions
from ._sdk_streams import SDKStream, replay_of
from ._unexpected import WireShape, require_event_stream, whole_response
from ._wire_text import utf8_payload

__all__ = [
    "CHAT_SHAPE",
    "NO_KEY",
    "OpenAIChatModel",
    "build_openai_client",
    "is_openai_url",
]

CHAT_SHAPE = WireShape("an OpenAI chat completion", "choices")
"""What every whole response of this API is (see `_unexpected`)."""

NO_KEY = "not-needed"
"""The key sent to an OpenAI-compatible server when none was given (local
servers rarely check one; one that does answers 401, which says so)."""

_OPENAI_HOSTS = re.compile(r"(^|\.)(openai\.com|openai\.azure\.com)$")
_OPENAI_NAMES = re.compile(r"^(gpt-|chatgpt-|o\d|codex-|computer-use-|ft:)")
"""Model families only OpenAI (or a gateway in front of it) serves."""
_NULL_CONTENT_REFUSED = re.compile(r"content", re.IGNORECASE)
_NULL_CONTENT_WHY = re.compile(
    r"null|none|string|required|missing|empty", re.IGNORECASE
)


def is_openai_url(url: str | None) -> bool:
    """Whether requests to `url` go to OpenAI itself (None: the SDK's default, OpenAI)."""
    if url is None:
        return True
    host = urlsplit(url.strip()).hostname or ""
    return _OPENAI_HOSTS.search(host.lower()) is not None


def build_openai_client(
    api_key: str | None,
    base_url: str | None,
    timeout: float,
    given: openai.AsyncOpenAI | None,
    *,
    owner: str,
) -> openai.AsyncOpenAI:
    """An SDK client with the SDK's retries off (ours own the policy).

    Raises:
        MissingAPIKeyError: no key was given and ``OPENAI_API_KEY`` is not
            set; `owner` (``"OpenAIChatModel('gpt-4.1')"``) names the model.
        AuthenticationError: the SDK cannot be configured otherwise.
    """
    try:
        if given is not None:
            return given.with_options(max_retries=0)
        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout
        )
    except openai.OpenAIError as exc:
        if api_key is None:
            raise MissingAPIKeyError(
                f"OPENAI_API_KEY is not set and {owner} was given no api_key:"
                " set the variable or pass api_key=; no request was sent",
                variable="OPENAI_API_KEY",
            ) from exc
        raise AuthenticationError(f"cannot build the openai client: {exc}") from exc


@final
class OpenAIChatModel(ProviderModel):
    """A model behind the Chat Completions API, through the official `openai` SDK.

    Streams with ``stream_options.include_usage`` so usage (with cached
    tokens) arrives at the end. A server that refuses to stream with tools
    (llama-cpp-python's does) gets its requests with tools sent whole from the
    first refusal on, with one warning; one that rejects an assistant turn
    with content null gets that request again with content "", and "" from
    then on, with one warning. The SDK's own retries are off: wrap the model
    in a `RetryingModel` for retries and fallback.

    Args:
        name: The model id, such as ``"gpt-4.1"`` or a local server's model name.
        api_key: The API key; None lets the SDK read ``OPENAI_API_KEY``. An
            OpenAI-compatible server with neither gets a placeholder key.
        base_url: Another endpoint, such as an OpenAI-compatible server's ``/v1``
            (None: ``$OPENAI_BASE_URL``, else OpenAI). A URL that cannot be
            one (no ``http://``, no host, a bad port) is a `ConfigError` here.
        compatible: The server is an OpenAI-compatible one, not OpenAI: the
            capability table then sends no ``parallel_tool_calls`` unless
            `supports_parallel_tool_calls` says otherwise, the output cap
            goes in ``max_tokens``, and an assistant turn that only called
            tools is sent with content "" (llama-cpp-python rejects null).
            None (the default) decides from the URL and the name: a base URL
            that is not OpenAI's serving a model not named like OpenAI's
            (``gpt-…``, ``o1…``, ``chatgpt-…``) is a compatible server; a
            model named like OpenAI's there is taken for OpenAI behind a
            gateway. Pass it to decide yourself.
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
        compatible: bool | None = None,
        max_tokens_field: MaxTokensField | None = None,
        include_usage: bool = True,
        client: openai.AsyncOpenAI | None = None,
        **options: Unpack[ProviderOptions],
    ) -> None:
        if client is None:
            checked_base_url(base_url, variable="OPENAI_BASE_URL")
        if compatible is None:
            compatible = _compatible_by_default(name, base_url, client)
        self._provider: Provider = "openai-compatible" if compatible else "openai"
        super().__init__(name, **options)
        self._api_key = api_key
        self._base_url = base_url
        self._max_tokens_field: MaxTokensField = max_tokens_field or (
            "max_tokens" if compatible else "max_completion_tokens"
        )
        self._include_usage = include_usage
        self._given_client = client
        self._client: openai.AsyncOpenAI | None = None
        self._empty_content = compatible
        """Send "" for an assistant turn that only called tools (else null)."""
        self._placeholder_key = (
            compatible and api_key is None and not os.environ.get("OPENAI_API_KEY")
        )

    @property
    def compatible(self) -> bool:
        """Whether the server is taken for an OpenAI-compatible one (see ``compatible=``)."""
        return self._provider == "openai-compatible"

    def _sdk(self) -> openai.AsyncOpenAI:
        if self._client is None:
            key = NO_KEY if self._placeholder_key else self._api_key
            self._client = build_openai_client(
                key,
                self._base_url,
                self._timeout,
                self._given_client,
                owner=f"OpenAIChatModel({self._name!r})",
            )
        return self._client

    async def _open(
        self, request: ModelRequest, *, send_flag: bool, stream: bool
    ) -> SDKStream:
        empty: Literal[""] | None = "" if self._empty_content else None
        params = self._params(request, send_flag, stream, empty)
        try:
            return await self._send(params, stream=stream)
        except openai.APIStatusError as exc:
            if empty is not None or not _refuses_null_content(exc, params):
                raise
            refusal = exc
        # Once per request, and learned only if answered: see `_refuses_null_content`.
        events = await self._send(
            self._params(request, send_flag, stream, ""), stream=stream
        )
        self._empty_content = True
        self._learned.null_content_rejected = True
        self._warn(
            f"{self._name}: the server rejected an assistant turn that only called"
            f" tools, sent with content null (HTTP {refusal.status_code}); sent it"
            ' again with content "", and sending "" to this model from now on'
            " (compatible=True does so from the start)"
        )
        return events

    def _params(
        self,
        request: ModelRequest,
        send_flag: bool,
        stream: bool,
        empty: Literal[""] | None,
    ) -> dict[str, Any]:
        params = chat_params(
            request,
            model=self._name,
            send_flag=send_flag,
            max_tokens_field=self._max_tokens_field,
            include_usage=self._include_usage and stream,
            empty_content=empty,
        )
        return utf8_payload(params)

    async def _send(self, params: dict[str, Any], *, stream: bool) -> SDKStream:
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
        mapped = map_openai_error(exc)
        if isinstance(mapped, AuthenticationError) and self._placeholder_key:
            return AuthenticationError(
                f"{mapped} (no API key was given: set OPENAI_API_KEY or pass api_key=)"
            )
        return mapped

    async def aclose(self) -> None:
        """Close the SDK client this model built (a given client is left open)."""
        client, self._client = self._client, None
        if client is not None and self._given_client is None:
            await client.close()


def _compatible_by_default(
    name: str, base_url: str | None, client: openai.AsyncOpenAI | None
) -> bool:
    """Whether a model built without ``compatible=`` talks to a compatible server.

    The URL is what the SDK will use: `base_url`, else the given client's,
    else ``$OPENAI_BASE_URL``, else OpenAI's.
    """
    url = base_url
    if url is None and client is not None:
        url = str(client.base_url)
    if url is None:
        url = os.environ.get("OPENAI_BASE_URL") or None
    if is_openai_url(url):
        return False
    bare = name.rsplit("/", 1)[-1].lower()
    return _OPENAI_NAMES.search(bare) is None


def _refuses_null_content(exc: openai.APIStatusError, params: dict[str, Any]) -> bool:
    """Whether `exc` may be the server refusing an assistant turn's ``content: null``.

    Only when the request had such a turn (one that only called tools) and the
    server's own words (an error object, not a proxy's HTML page) name the
    content and why (null, None, not a string, required, missing, empty):
    llama-cpp-python answers HTTP 500 ``'loc': (..., 'content'), 'msg':
    'Input should be a valid string', 'input': None``. Only a suspicion: the
    caller sends the request again with content "" once, and learns it only if
    that is answered; else the second answer's error is raised.
    """
    if not any(
        m.get("role") == "assistant" and m.get("content") is None
        for m in params.get("messages", ())
    ):
        return False
    if not 400 <= exc.status_code < 600:
        return False
    media = exc.response.headers.get("content-type", "")
    if "html" in media.lower():
        return False
    said = f"{exc.message} {exc.body}"
    return (
        _NULL_CONTENT_REFUSED.search(said) is not None
        and _NULL_CONTENT_WHY.search(said) is not None
    )
