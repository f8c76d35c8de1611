"""`coding_tools(root)`: the built-in tool set of a coding agent."""

from __future__ import annotations

import os

from .._sandbox_mode import SandboxMode
from .._tool import Tool
from ._edit import EditTool, WriteTool
from ._glob import GlobTool
from ._grep import GrepTool
from ._read import ReadTool
from ._todo import TodoReadTool, TodoWriteTool
from ._web_fetch import WebFetchTool
from ._workspace import Workspace
from .bash import BashTool
from .sandbox import Backend

__all__ = ["coding_tools"]


def coding_tools(
    root: str | os.PathLike[str],
    *,
    sandbox: SandboxMode | str = SandboxMode.WORKSPACE_WRITE,
    network: bool = True,
    sandbox_backend: Backend | None = None,
) -> list[Tool]:
    """The built-in tools, confined to the directory `root`.

    Model-facing names, in order: read glob grep edit write bash web_fetch
    todo_write todo_read. Every file tool resolves paths against `root` and
    refuses any that leads outside it; bash runs with `root` as working
    directory, inside the OS sandbox: `sandbox` is the mode of bash calls not
    proven read-only (`AgentConfig.sandbox` overrides it), `network` False
    cuts their network, `sandbox_backend` forces ``"landlock"`` or ``"bwrap"``
    (tests, benchmarks); grep uses ripgrep when `find_ripgrep` finds it.

    Raises:
        FileNotFoundError: `root` does not exist.
        NotADirectoryError: `root` is not a directory.
        ConfigError: `sandbox` names no mode.
    """
    workspace = Workspace(root)
    return [
        ReadTool(workspace),
        GlobTool(workspace),
        GrepTool(workspace),
        EditTool(workspace),
        WriteTool(workspace),
        BashTool(
            workspace,
            sandbox=sandbox,
            network=network,
            sandbox_backend=sandbox_backend,
        ),
        WebFetchTool(),
        TodoWriteTool(),
        TodoReadTool(),
    ]
