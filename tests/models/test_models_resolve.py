"""resolve_model specs and the capability table."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolweave import ConfigError
from toolweave.messages import StopReason
from toolweave.models import (
    AnthropicModel,
    Model,
    ModelRequest,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ScriptedModel,
    StreamChunk,
    StreamEnd,
    context_window_for,
    parallel_flag_supported,
    resolve_model,
)


@pytest.mark.parametrize(
    ("spec", "cls", "name"),
    [
        ("anthropic:claude-sonnet-4-6", AnthropicModel, "claude-sonnet-4-6"),
        ("openai:gpt-4.1", OpenAIChatModel, "gpt-4.1"),
        ("openai-responses:gpt-5", OpenAIResponsesModel, "gpt-5"),
        ("claude-opus-4-7", AnthropicModel, "claude-opus-4-7"),
        ("gpt-4o-mini", OpenAIChatModel, "gpt-4o-mini"),
        ("o4-mini", OpenAIChatModel, "o4-mini"),
    ],
)
def test_specs_resolve_to_their_provider(
    spec: str, cls: type[Model], name: str
) -> None:
    model = resolve_model(spec, api_key="k")
    assert type(model) is cls
    assert model.name == name


def test_an_openai_compatible_server_needs_a_base_url_and_gets_no_flag() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        resolve_model("openai-compatible:llama3")
    model = resolve_model(
        "openai-compatible:llama3", base_url="http://127.0.0.1:8000/v1"
    )
    assert isinstance(model, OpenAIChatModel)
    assert model.sends_parallel_flag is False
    configured = resolve_model(
        "openai-compatible:llama3",
        base_url="http://127.0.0.1:8000/v1",
        supports_parallel_tool_calls=True,
    )
    assert isinstance(configured, OpenAIChatModel)
    assert configured.sends_parallel_flag is True


@pytest.mark.parametrize(
    "spec", ["mistral-large", "google:gemini-2", "anthropic:", "llama3"]
)
def test_unplaceable_specs_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        resolve_model(spec)


def test_a_model_is_returned_as_it_is() -> None:
    model = ScriptedModel([])
    assert resolve_model(model) is model


def test_a_custom_model_needs_only_name_and_stream() -> None:
    class Echo(Model):
        @property
        def name(self) -> str:
            return "echo"

        async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
            yield StreamEnd(StopReason.END_TURN)

    assert resolve_model(Echo()).context_window is None


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("claude-sonnet-4-6", 200_000),
        ("gpt-4o-2024-08-06", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4", 8_192),
        ("gpt-5", 400_000),
        ("o1-mini", 128_000),
        ("o3", 200_000),
        ("openai/gpt-4o", 128_000),
        ("llama3", None),
    ],
)
def test_context_windows_of_common_models(name: str, window: int | None) -> None:
    assert context_window_for(name) == window


def test_a_configured_window_wins() -> None:
    assert (
        AnthropicModel("claude-sonnet-4-6", context_window=1_000_000).context_window
        == 1_000_000
    )
    assert (
        OpenAIChatModel("my-local", base_url="http://127.0.0.1:1/v1").context_window
        is None
    )


@pytest.mark.parametrize(
    ("provider", "name", "supported"),
    [
        ("anthropic", "claude-haiku-4-5", True),
        ("openai", "gpt-4o", True),
        ("openai", "gpt-4.1-nano", True),
        ("openai", "gpt-5-mini", True),
        ("openai", "o3", True),
        ("openai", "o4-mini", True),
        ("openai", "o1", False),
        ("openai", "o1-preview", False),
        ("openai", "o3-mini", False),
        ("openai", "o3-mini-high", False),
        ("openai", "gpt-4o-lite", False),
        ("openai", "text-davinci-003", False),
        ("openai-compatible", "gpt-4o", False),
    ],
)
def test_the_parallel_flag_table(provider: str, name: str, supported: bool) -> None:
    assert parallel_flag_supported(provider, name) is supported  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "spec",
    [
        "anthropic:claude-sonnet-4-6",
        "openai:gpt-4.1",
        "openai-responses:gpt-5",
        "openai-compatible:local",
    ],
)
@pytest.mark.parametrize("stream", [True, False])
def test_stream_reaches_every_provider_through_a_spec(spec: str, stream: bool) -> None:
    model = resolve_model(
        spec, api_key="k", base_url="http://127.0.0.1:9/v1", stream=stream
    )
    learned = model.capabilities  # type: ignore[attr-defined]
    assert learned.streams_with_tools is stream
    assert learned.streams_without_tools is stream
    assert not learned.streaming_with_tools_confirmed
