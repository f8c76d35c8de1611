"""Models: the neutral Model contract, providers, retries, and test models."""

from ._base import ChunkAggregator as ChunkAggregator
from ._base import Model as Model
from ._base import ModelRequest as ModelRequest
from ._base import ReasoningChunk as ReasoningChunk
from ._base import StreamChunk as StreamChunk
from ._base import StreamEnd as StreamEnd
from ._base import TextChunk as TextChunk
from ._base import ToolDefinition as ToolDefinition
from ._base import ToolUseReady as ToolUseReady
from ._scripted import ScriptedModel as ScriptedModel
from ._scripted import ScriptStep as ScriptStep

__all__ = [
    "ChunkAggregator",
    "Model",
    "ModelRequest",
    "ReasoningChunk",
    "ScriptStep",
    "ScriptedModel",
    "StreamChunk",
    "StreamEnd",
    "TextChunk",
    "ToolDefinition",
    "ToolUseReady",
]
