"""The options every provider model shares are one group the base class reads.

Each constructor keeps its keywords (``stream=``, ``timeout=``,
``context_window=``, ``supports_parallel_tool_calls=``, ``on_warning=``); a
keyword no model takes is still a TypeError naming it, as a misspelt
keyword always was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolweave.events import Warning as WarningEvent
from toolweave.models import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
from toolweave.models._provider import ProviderModel, ProviderOptions

MODELS: dict[str, Callable[..., ProviderModel]] = {
    "anthropic": lambda **kw: AnthropicModel("claude-sonnet-4-6", api_key="k", **kw),
    "openai-chat": lambda **kw: OpenAIChatModel("gpt-4.1", api_key="k", **kw),
    "openai-responses": lambda **kw: OpenAIResponsesModel("gpt-4.1", api_key="k", **kw),
}


def _heard(warning: WarningEvent) -> None:
    del warning


@pytest.mark.parametrize("model", list(MODELS))
def test_every_shared_keyword_still_reaches_the_model(model: str) -> None:
    options: dict[str, Any] = {
        "stream": False,
        "timeout": 12.5,
        "context_window": 4_096,
        "supports_parallel_tool_calls": False,
        "on_warning": _heard,
    }
    assert set(options) == set(ProviderOptions.__annotations__)
    made = MODELS[model](**options)
    assert made.context_window == 4_096
    assert made.sends_parallel_flag is False
    assert made.capabilities.streams_without_tools is False
    assert made._timeout == 12.5  # what the SDK client is built with
    assert made._on_warning is _heard


@pytest.mark.parametrize("model", list(MODELS))
def test_the_defaults_are_as_before(model: str) -> None:
    made = MODELS[model]()
    assert made.capabilities.streams_without_tools is True
    assert made._timeout == 600.0
    assert made._on_warning is None
    assert made.context_window is not None  # from the known-model table


@pytest.mark.parametrize("model", list(MODELS))
def test_an_unknown_keyword_is_a_type_error_naming_it(model: str) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'strem'"):
        MODELS[model](strem=False)
