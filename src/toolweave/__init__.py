"""toolweave: an agent runtime whose heart is safe parallel tool execution.

The public API is what this module re-exports; everything else is private.
"""

from . import events as events
from . import execution as execution
from . import loop as loop
from . import models as models
from . import scheduling as scheduling
from . import sessions as sessions
from . import tools as tools
from ._exceptions import AuthenticationError as AuthenticationError
from ._exceptions import BadRequestError as BadRequestError
from ._exceptions import ClusterError as ClusterError
from ._exceptions import ConfigError as ConfigError
from ._exceptions import ControlSignal as ControlSignal
from ._exceptions import InternalError as InternalError
from ._exceptions import MCPConnectionError as MCPConnectionError
from ._exceptions import MissingAPIKeyError as MissingAPIKeyError
from ._exceptions import MissingExtraError as MissingExtraError
from ._exceptions import ModelConnectionError as ModelConnectionError
from ._exceptions import ModelError as ModelError
from ._exceptions import ModelRetry as ModelRetry
from ._exceptions import ModelServerError as ModelServerError
from ._exceptions import OverloadedError as OverloadedError
from ._exceptions import PermissionDeniedError as PermissionDeniedError
from ._exceptions import PromptTooLongError as PromptTooLongError
from ._exceptions import RateLimitedError as RateLimitedError
from ._exceptions import SessionBusyError as SessionBusyError
from ._exceptions import StopRun as StopRun
from ._exceptions import StoreError as StoreError
from ._exceptions import ToolDefinitionError as ToolDefinitionError
from ._exceptions import ToolError as ToolError
from ._exceptions import ToolInputError as ToolInputError
from ._exceptions import ToolTimeoutError as ToolTimeoutError
from ._exceptions import ToolweaveError as ToolweaveError
from ._exceptions import UnexpectedModelCallError as UnexpectedModelCallError
from ._exceptions import UnexpectedResponseError as UnexpectedResponseError
from ._exceptions import UnknownToolError as UnknownToolError
from ._exceptions import UsageError as UsageError
from ._exceptions import WorkspaceEscapeError as WorkspaceEscapeError
from .events import CompletionReason as CompletionReason
from .loop import Agent as Agent
from .loop import AgentConfig as AgentConfig
from .loop import AgentRun as AgentRun
from .loop import RunResult as RunResult
from .loop import subagent as subagent
from .messages import Image as Image
from .messages import Message as Message
from .messages import ModelResponse as ModelResponse
from .messages import StopReason as StopReason
from .messages import Text as Text
from .messages import Thinking as Thinking
from .messages import ToolCall as ToolCall
from .messages import ToolResult as ToolResult
from .messages import Usage as Usage
from .scheduling import ConcurrencyConfig as ConcurrencyConfig
from .scheduling import Dispatcher as Dispatcher
from .scheduling import InterruptToken as InterruptToken
from .tools import Access as Access
from .tools import Concurrency as Concurrency
from .tools import Interrupt as Interrupt
from .tools import SandboxMode as SandboxMode
from .tools import Tool as Tool
from .tools import ToolContext as ToolContext
from .tools import ToolRegistry as ToolRegistry
from .tools import tool as tool

__version__ = "0.1.0"

__all__ = [
    "Access",
    "Agent",
    "AgentConfig",
    "AgentRun",
    "AuthenticationError",
    "BadRequestError",
    "ClusterError",
    "CompletionReason",
    "Concurrency",
    "ConcurrencyConfig",
    "ConfigError",
    "ControlSignal",
    "Dispatcher",
    "Image",
    "InternalError",
    "Interrupt",
    "InterruptToken",
    "MCPConnectionError",
    "Message",
    "MissingAPIKeyError",
    "MissingExtraError",
    "ModelConnectionError",
    "ModelError",
    "ModelResponse",
    "ModelRetry",
    "ModelServerError",
    "OverloadedError",
    "PermissionDeniedError",
    "PromptTooLongError",
    "RateLimitedError",
    "RunResult",
    "SandboxMode",
    "SessionBusyError",
    "StopReason",
    "StopRun",
    "StoreError",
    "Text",
    "Thinking",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputError",
    "ToolRegistry",
    "ToolResult",
    "ToolTimeoutError",
    "ToolweaveError",
    "UnexpectedModelCallError",
    "UnexpectedResponseError",
    "UnknownToolError",
    "Usage",
    "UsageError",
    "WorkspaceEscapeError",
    "events",
    "execution",
    "loop",
    "models",
    "scheduling",
    "sessions",
    "tool",
    "tools",
]
