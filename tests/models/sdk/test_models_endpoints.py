"""A missing key and a wrong base URL, through tw.Agent and the SDKs (issue 27, items 4, 5).

Every provider class (OpenAI Chat Completions, Responses, Anthropic) meets
each mistake a newcomer makes with its real SDK against the loopback server:

- no API key in the environment and none given: the run ends in ERROR at the
  first model call, the detail names the variable, nothing is sent, nothing
  is logged as an internal error;
- a base URL that cannot be a URL (no ``http://``, a broken scheme, no host, a
  bad port, empty; also in ``$OPENAI_BASE_URL``/``$ANTHROPIC_BASE_URL``): a
  `ConfigError` when the model is built, naming the value and the fix;
- a base URL that is a URL but not the API's: missing ``/v1`` (and Anthropic's
  extra ``/v1``), a path to a page that is not the API (a 404 page, a 200
  page), a port where nothing listens: the detail names the URL and the likely
  fix, says no model was reached, and is not retried when it cannot be right.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from models_loopback import JsonReply, LoopbackServer, RawReply

import toolweave as tw
from toolweave.messages import Message
from toolweave.models import (
    AnthropicModel,
    Model,
    ModelRequest,
    OpenAIChatModel,
    OpenAIResponsesModel,
    RetryPolicy,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        r"ignore:Async generator '(openai|anthropic|httpx2|httpcore2)\.:ResourceWarning"
    ),
]

CREDENTIAL_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)

Build = Callable[..., Model]

PROVIDERS: dict[str, tuple[Build, str, str]] = {
    # name: (build(base_url, **kw), the key's variable, what the SDK appends)
    "chat": (
        lambda url, **kw: OpenAIChatModel("gpt-4.1", base_url=url, **kw),
        "OPENAI_API_KEY",
        "/v1",
    ),
    "responses": (
        lambda url, **kw: OpenAIResponsesModel("gpt-5", base_url=url, **kw),
        "OPENAI_API_KEY",
        "/v1",
    ),
    "anthropic": (
        lambda url, **kw: AnthropicModel("claude-sonnet-4-6", base_url=url, **kw),
        "ANTHROPIC_API_KEY",
        "",
    ),
}

FAST_RETRIES = tw.AgentConfig(
    max_iterations=2, retry=RetryPolicy(max_attempts=3, initial_delay=0.01, jitter=0)
)


@pytest.fixture(autouse=True)
def newcomers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key and no base URL of any provider in the environment."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


async def _run(model: Model) -> tw.RunResult:
    agent = tw.Agent(model, [], config=FAST_RETRIES)
    try:
        return await agent.run("hello")
    finally:
        await model.aclose()


def _free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _header(server: LoopbackServer, name: str) -> str | None:
    """A header of the first request, by its name in any case."""
    headers = {k.lower(): v for k, v in server.requests[0].headers.items()}
    return headers.get(name)


# -- a missing key -------------------------------------------------------------------


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_no_key_ends_the_run_at_once_naming_the_variable(
    provider: str, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    build, variable, suffix = PROVIDERS[provider]
    result = await _run(build(server.url + suffix))
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert result.detail.startswith("no model was reached: MissingAPIKeyError: ")
    assert f"{variable} is not set" in result.detail
    assert "api_key=" in result.detail and "no request was sent" in result.detail
    assert result.output == ""
    assert server.requests == []  # nothing sent, nothing retried
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_no_key_raises_missing_api_key_error_from_the_model_itself(
    provider: str, server: LoopbackServer
) -> None:
    """Used without an Agent, the model raises the error: one class, the variable named."""
    build, variable, suffix = PROVIDERS[provider]
    model = build(server.url + suffix)
    request = ModelRequest([Message("user", "hi")])
    try:
        with pytest.raises(tw.MissingAPIKeyError) as caught:
            await model.complete(request)
    finally:
        await model.aclose()
    assert caught.value.variable == variable
    assert isinstance(caught.value, tw.AuthenticationError)
    assert isinstance(caught.value, tw.ToolweaveError)
    assert caught.value.reached_model is False
    assert server.requests == []


async def test_anthropic_auth_token_is_a_key_too(
    server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's other credential is honoured: the request goes out, its 401 is the API's."""
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-1")
    server.script(
        JsonReply(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": "bad token"},
            },
        )
    )
    result = await _run(AnthropicModel("claude-sonnet-4-6", base_url=server.url))
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert result.detail.startswith("the model call failed: AuthenticationError")
    assert len(server.requests) == 1
    assert _header(server, "authorization") == "Bearer token-1"


async def test_a_local_model_needs_no_key_and_a_401_says_none_was_given(
    server: LoopbackServer,
) -> None:
    """A compatible server gets a placeholder key; one that checks keys says so."""
    server.script(JsonReply(401, {"error": {"message": "invalid api key"}}))
    model = OpenAIChatModel("local", base_url=server.url + "/v1")
    assert model.compatible
    result = await _run(model)
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert "no API key was given: set OPENAI_API_KEY or pass api_key=" in result.detail
    assert len(server.requests) == 1  # a 401 is not retried
    assert _header(server, "authorization") == "Bearer not-needed"


@pytest.mark.parametrize(
    ("name", "base_url", "compatible"),
    [
        ("local", "http://127.0.0.1:8000/v1", True),
        ("qwen2.5-coder:7b", "http://localhost:11434/v1", True),
        ("meta-llama/Llama-3.1-8B", "https://api.together.xyz/v1", True),
        ("gpt-4o-mini", "http://127.0.0.1:8000/v1", False),  # OpenAI behind a gateway
        ("openai/o3-mini", "https://gateway.example/v1", False),
        ("local", "https://api.openai.com/v1", False),
        ("local", "https://my.openai.azure.com/openai/v1", False),
        ("local", None, False),
    ],
)
def test_compatible_by_default_from_the_url_and_the_name(
    name: str, base_url: str | None, compatible: bool
) -> None:
    model = OpenAIChatModel(name, "k", base_url)
    assert model.compatible is compatible


def test_compatible_by_default_reads_openai_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert OpenAIChatModel("local", "k").compatible
    assert not OpenAIChatModel("local", "k", compatible=False).compatible


# -- a base URL that cannot be one: refused when the model is built --------------------

BAD_URLS = [
    # (base_url, what the message must contain)
    ("127.0.0.1:8000/v1", "write it as 'http://127.0.0.1:8000/v1'"),
    ("localhost:8000", "write it as 'http://localhost:8000'"),
    ("http//127.0.0.1:8000/v1", "write it as 'http://127.0.0.1:8000/v1'"),
    ("http:/127.0.0.1:8000/v1", "write it as 'http://127.0.0.1:8000/v1'"),
    ("HTTPS::api.example.com/v1", "write it as 'https://api.example.com/v1'"),
    ("htp://127.0.0.1:8000/v1", "starts with htp://"),
    ("ws://127.0.0.1:8000/v1", "over http:// or https://"),
    ("http:///v1", "names no host"),
    ("http://127.0.0.1:99999/v1", "'99999' is not a port number"),
    ("http://127.0.0.1:80a/v1", "'80a' is not a port number"),
    ("", "is empty"),
    ("   ", "is empty"),
]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize(("base_url", "said"), BAD_URLS)
def test_a_base_url_that_cannot_be_one_is_refused_at_construction(
    provider: str, base_url: str, said: str
) -> None:
    build = PROVIDERS[provider][0]
    with pytest.raises(tw.ConfigError) as caught:
        build(base_url, api_key="k")
    assert said in str(caught.value)
    if base_url.strip():
        assert repr(base_url) in str(caught.value)  # the value, named


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_bad_base_url_variable_is_refused_and_named(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    variable = "ANTHROPIC_BASE_URL" if provider == "anthropic" else "OPENAI_BASE_URL"
    monkeypatch.setenv(variable, "localhost:1234/v1")
    build = PROVIDERS[provider][0]
    with pytest.raises(tw.ConfigError) as caught:
        build(None, api_key="k")
    assert f"${variable} 'localhost:1234/v1'" in str(caught.value)
    assert "'http://localhost:1234/v1'" in str(caught.value)


# -- a base URL that is a URL, but not the API's -------------------------------------

FASTAPI_404 = RawReply(404, b'{"detail":"Not Found"}', "application/json")
HTML_404 = RawReply(404, b"<html><body><h1>404 Not Found</h1></body></html>")
HTML_200 = RawReply(200, b"<!doctype html><html><body>My app</body></html>")
EMPTY_404 = RawReply(404, b"", None)


def _wrong_url_rows() -> list[Any]:
    rows = []
    for provider in sorted(PROVIDERS):
        # the base the user wrote, relative to the server; the hint it must get
        if provider == "anthropic":
            missing = ("/v1", FASTAPI_404, "try base_url='{root}'")
        else:
            missing = ("", FASTAPI_404, "try base_url='{root}/v1'")
        rows += [
            pytest.param(provider, *missing, id=f"{provider}-v1"),
            pytest.param(
                provider, "/docs", HTML_404, "no model API", id=f"{provider}-page404"
            ),
            pytest.param(
                provider, "/site", EMPTY_404, "empty body", id=f"{provider}-empty404"
            ),
            pytest.param(
                provider, "/app", HTML_200, "text/html", id=f"{provider}-page200"
            ),
        ]
    return rows


@pytest.mark.parametrize(("provider", "path", "reply", "said"), _wrong_url_rows())
async def test_a_url_with_no_api_names_it_and_is_not_retried(
    provider: str, path: str, reply: RawReply, said: str, server: LoopbackServer
) -> None:
    build = PROVIDERS[provider][0]
    server.script(reply)
    result = await _run(build(server.url + path, api_key="k"))
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert result.detail.startswith("no model was reached: "), result.detail
    assert said.format(root=server.url) in result.detail, result.detail
    assert server.url in result.detail  # the URL, named
    assert len(server.requests) == 1  # the same request would meet it again


async def test_the_apis_own_404_is_the_apis_error(server: LoopbackServer) -> None:
    """An unknown model is a 404 with the API's error object: a model was reached."""
    server.script(
        JsonReply(
            404,
            {"error": {"message": "The model 'gpt-9' does not exist", "code": None}},
        )
    )
    result = await _run(OpenAIChatModel("gpt-4.1", "k", server.url + "/v1"))
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert result.detail.startswith("the model call failed: "), result.detail
    assert "gpt-9" in result.detail and "no model API" not in result.detail


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_a_port_where_nothing_listens_names_the_url_and_the_port(
    provider: str,
) -> None:
    """Connection refused is retried (a server may be starting), then told plainly."""
    build, _, suffix = PROVIDERS[provider]
    url = f"http://127.0.0.1:{_free_port()}{suffix}"
    result = await _run(build(url, api_key="k"))
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert result.detail.startswith("no model was reached: ModelConnectionError: ")
    assert "connection refused" in result.detail
    assert "is the port in base_url right?" in result.detail
    assert url.split("/v1")[0].removeprefix("http://") in result.detail


async def test_a_host_that_does_not_resolve_is_named() -> None:
    result = await _run(
        OpenAIChatModel("gpt-4.1", "k", "http://no-such-host.invalid/v1")
    )
    assert result.completion_reason is tw.CompletionReason.ERROR
    assert result.detail.startswith("no model was reached: ")
    assert "'no-such-host.invalid' does not resolve" in result.detail


def test_the_error_classes_are_public_and_share_the_one_base() -> None:
    assert issubclass(tw.MissingAPIKeyError, tw.AuthenticationError)
    assert issubclass(tw.MissingAPIKeyError, tw.ToolweaveError)
    assert issubclass(tw.MissingExtraError, tw.UsageError)
    assert issubclass(tw.MissingExtraError, ModuleNotFoundError)
    assert tw.ModelError.reached_model is True
    assert tw.MissingAPIKeyError.reached_model is False
