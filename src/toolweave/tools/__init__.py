"""The tool contract: the `Declaration` record, `@tool`, the registry, the context tools see."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from .._native.threads import check_cancelled as check_cancelled
from .._native.threads import run_in_worker_thread as run_in_worker_thread
from ._access import Access as Access
from ._access import Concurrency as Concurrency
from ._access import Interrupt as Interrupt
from ._access import Warrant as Warrant
from ._access import keys_overlap as keys_overlap
from ._context import ReadLedger as ReadLedger
from ._context import ReadRecord as ReadRecord
from ._context import SessionState as SessionState
from ._context import ShownResult as ShownResult
from ._context import ToolContext as ToolContext
from ._context import TranscriptView as TranscriptView
from ._context import result_digest as result_digest
from ._declaration import READ_ONLY as READ_ONLY
from ._declaration import UNDECLARED as UNDECLARED
from ._declaration import Declaration as Declaration
from ._declaration_errors import (
    reporting_declaration_errors as reporting_declaration_errors,
)
from ._declaration_errors import (
    silenced_declaration_errors as silenced_declaration_errors,
)
from ._function import FunctionTool as FunctionTool
from ._function import tool as tool
from ._registry import ToolLike as ToolLike
from ._registry import ToolRegistry as ToolRegistry
from ._sandbox_mode import SandboxMode as SandboxMode
from ._sandbox_mode import sandbox_mode as sandbox_mode
from ._tool import DEFAULT_MAX_RESULT_CHARS as DEFAULT_MAX_RESULT_CHARS
from ._tool import PermissionCheck as PermissionCheck
from ._tool import Tool as Tool
from ._wrapped import WrappedTool as WrappedTool

if TYPE_CHECKING:
    from .builtin import coding_tools as coding_tools

# The built-in tools load on first use (`import toolweave` stays light).
__getattr__, __dir__ = lazy_exports(__name__, {"coding_tools": ".builtin"})

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "READ_ONLY",
    "UNDECLARED",
    "Access",
    "Concurrency",
    "Declaration",
    "FunctionTool",
    "Interrupt",
    "PermissionCheck",
    "ReadLedger",
    "ReadRecord",
    "SandboxMode",
    "SessionState",
    "ShownResult",
    "Tool",
    "ToolContext",
    "ToolLike",
    "ToolRegistry",
    "TranscriptView",
    "Warrant",
    "WrappedTool",
    "check_cancelled",
    "coding_tools",
    "keys_overlap",
    "reporting_declaration_errors",
    "result_digest",
    "run_in_worker_thread",
    "sandbox_mode",
    "silenced_declaration_errors",
    "tool",
]
