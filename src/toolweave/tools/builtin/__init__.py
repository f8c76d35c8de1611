"""Built-in coding tools, confined to a workspace root, each declaring what it touches.

``coding_tools(root)`` returns read, glob, grep, edit, write, bash, web_fetch,
todo_write and todo_read. Reads declare ``reads fs:<path>``, edits and writes
``writes fs:<file>``, bash is SAFE only when `classify_bash` proves the command
read-only (and then runs in the read-only OS sandbox, see `sandbox_backend`),
web_fetch touches nothing shared, the todo tools share ``todo:``.
"""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports

if TYPE_CHECKING:
    from ._coding import coding_tools as coding_tools
    from ._edit import EditTool as EditTool
    from ._edit import WriteTool as WriteTool
    from ._glob import GlobTool as GlobTool
    from ._grep import GrepTool as GrepTool
    from ._grep import find_ripgrep as find_ripgrep
    from ._html import html_to_text as html_to_text
    from ._read import ReadTool as ReadTool
    from ._todo import TodoItem as TodoItem
    from ._todo import TodoReadTool as TodoReadTool
    from ._todo import TodoWriteTool as TodoWriteTool
    from ._web_fetch import WebFetchTool as WebFetchTool
    from ._workspace import Workspace as Workspace
    from .bash import BashTool as BashTool
    from .bash import CommandParts as CommandParts
    from .bash import ShellCommand as ShellCommand
    from .bash import classify_bash as classify_bash
    from .bash import parse_prefixes as parse_prefixes
    from .sandbox import conservative_read_only as conservative_read_only
    from .sandbox import sandbox_backend as sandbox_backend

# Imported on first use: `import toolweave` loads no built-in tool (nor tree-sitter).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BashTool": ".bash",
        "classify_bash": ".bash",
        "parse_prefixes": ".bash",
        "CommandParts": ".bash",
        "ShellCommand": ".bash",
        "coding_tools": "._coding",
        "EditTool": "._edit",
        "WriteTool": "._edit",
        "GlobTool": "._glob",
        "GrepTool": "._grep",
        "find_ripgrep": "._grep",
        "html_to_text": "._html",
        "ReadTool": "._read",
        "conservative_read_only": ".sandbox",
        "sandbox_backend": ".sandbox",
        "TodoItem": "._todo",
        "TodoReadTool": "._todo",
        "TodoWriteTool": "._todo",
        "WebFetchTool": "._web_fetch",
        "Workspace": "._workspace",
    },
)

__all__ = [
    "BashTool",
    "CommandParts",
    "EditTool",
    "GlobTool",
    "GrepTool",
    "ReadTool",
    "ShellCommand",
    "TodoItem",
    "TodoReadTool",
    "TodoWriteTool",
    "WebFetchTool",
    "Workspace",
    "WriteTool",
    "classify_bash",
    "coding_tools",
    "conservative_read_only",
    "find_ripgrep",
    "html_to_text",
    "parse_prefixes",
    "sandbox_backend",
]
