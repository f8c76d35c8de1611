"""Models: the neutral Model contract, providers, retries, and test models.

The provider classes import their SDKs (about a second for `anthropic`), so they
load on first use: `import toolweave` stays fast for code that never calls a
hosted model.
"""

from typing import TYPE_CHECKING

from ._base import ChunkAggregator as ChunkAggregator
from ._base import Model as Model
from ._base import ModelRequest as ModelRequest
from ._base import ReasoningChunk as ReasoningChunk
from ._base import StreamChunk as StreamChunk
from ._base import StreamEnd as StreamEnd
from ._base import StreamRestart as StreamRestart
from ._base import TextChunk as TextChunk
from ._base import ToolDefinition as ToolDefinition
from ._base import ToolUseReady as ToolUseReady
from ._capabilities import Capabilities as Capabilities
from ._capabilities import context_window_for as context_window_for
from ._capabilities import parallel_flag_supported as parallel_flag_supported
from ._errors import parse_retry_after as parse_retry_after
from ._resolve import resolve_model as resolve_model
from ._retry import RetryInfo as RetryInfo
from ._retry import RetryingModel as RetryingModel
from ._retry import RetryPolicy as RetryPolicy
from ._retry import RetryStatistics as RetryStatistics
from ._scripted import ScriptedModel as ScriptedModel
from ._scripted import ScriptStep as ScriptStep
from ._warnings import forward_warnings as forward_warnings
from ._wire_ids import ANTHROPIC_IDS as ANTHROPIC_IDS
from ._wire_ids import CHAT_IDS as CHAT_IDS
from ._wire_ids import IdSpelling as IdSpelling
from ._wire_ids import unique_call_ids as unique_call_ids

if TYPE_CHECKING:
    from ._anthropic import AnthropicModel as AnthropicModel
    from ._openai_chat import OpenAIChatModel as OpenAIChatModel
    from ._openai_responses import OpenAIResponsesModel as OpenAIResponsesModel

_LAZY = {
    "AnthropicModel": "._anthropic",
    "OpenAIChatModel": "._openai_chat",
    "OpenAIResponsesModel": "._openai_responses",
}


def __getattr__(name: str) -> object:
    """Load a provider class (and its SDK) on first access."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ANTHROPIC_IDS",
    "CHAT_IDS",
    "AnthropicModel",
    "Capabilities",
    "ChunkAggregator",
    "IdSpelling",
    "Model",
    "ModelRequest",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "ReasoningChunk",
    "RetryInfo",
    "RetryPolicy",
    "RetryStatistics",
    "RetryingModel",
    "ScriptStep",
    "ScriptedModel",
    "StreamChunk",
    "StreamEnd",
    "StreamRestart",
    "TextChunk",
    "ToolDefinition",
    "ToolUseReady",
    "context_window_for",
    "forward_warnings",
    "parallel_flag_supported",
    "parse_retry_after",
    "resolve_model",
    "unique_call_ids",
]
