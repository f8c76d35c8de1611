"""resolve_model: a model spec string (or a Model) -> a Model."""

from __future__ import annotations

import re
from typing import Any

from .._exceptions import ConfigError
from ._base import Model

__all__ = ["resolve_model"]

_BARE_ANTHROPIC = re.compile(r"^claude-")
_BARE_OPENAI = re.compile(r"^(gpt-|o\d|chatgpt-)")


def resolve_model(
    spec: str | Model,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    **options: Any,
) -> Model:
    """The model a spec names. A `Model` is returned as it is.

    Specs:
        ``"anthropic:NAME"`` -> `AnthropicModel`;
        ``"openai:NAME"`` -> `OpenAIChatModel`;
        ``"openai-responses:NAME"`` -> `OpenAIResponsesModel`;
        ``"openai-compatible:NAME"`` -> `OpenAIChatModel` for an OpenAI-compatible
        server at `base_url` (required): no ``parallel_tool_calls`` unless
        ``supports_parallel_tool_calls=True`` is passed, output cap in ``max_tokens``.
        A bare ``claude-…`` is Anthropic, a bare ``gpt-…``/``o1…`` OpenAI Chat.

    `options` go to the model's constructor. Raises `ConfigError` for a spec
    it cannot place, or an OpenAI-compatible spec without `base_url`.
    """
    if isinstance(spec, Model):
        return spec
    provider, sep, name = spec.partition(":")
    if not sep:
        provider, name = _guess_provider(spec), spec
    if not name:
        raise ConfigError(f"model spec {spec!r} names no model")
    # Providers import their SDKs lazily (see the package docstring).
    if provider == "anthropic":
        from ._anthropic import AnthropicModel

        return AnthropicModel(name, api_key, base_url, **options)
    if provider == "openai":
        from ._openai_chat import OpenAIChatModel

        return OpenAIChatModel(name, api_key, base_url, **options)
    if provider == "openai-responses":
        from ._openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(name, api_key, base_url, **options)
    if provider == "openai-compatible":
        if base_url is None:
            raise ConfigError(f"{spec!r}: an OpenAI-compatible server needs base_url")
        from ._openai_chat import OpenAIChatModel

        return OpenAIChatModel(name, api_key, base_url, compatible=True, **options)
    raise ConfigError(
        f"unknown model provider {provider!r} in {spec!r}; use anthropic:, openai:, "
        "openai-responses: or openai-compatible:"
    )


def _guess_provider(spec: str) -> str:
    if _BARE_ANTHROPIC.match(spec):
        return "anthropic"
    if _BARE_OPENAI.match(spec):
        return "openai"
    raise ConfigError(
        f"cannot tell the provider of model {spec!r}; write it as 'anthropic:NAME', "
        "'openai:NAME', 'openai-responses:NAME' or 'openai-compatible:NAME'"
    )
