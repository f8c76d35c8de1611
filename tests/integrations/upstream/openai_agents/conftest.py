"""The Agents SDK's runner and tool tests, with toolweave's `scheduled_tools` swapped in.

``--swap=toolweave`` makes every `Agent` schedule its tools as a user would write
``Agent(..., tools=scheduled_tools(tools))``: `Agent.__post_init__` passes the tools
through `scheduled_tools` with its defaults (every tool undeclared, a barrier;
``on_error="raise"``). A clone (`Agent.clone`, `dataclasses.replace`) schedules its
tools anew (`scheduled_tools` re-wraps a scheduled tool's original, never twice).
``--swap=toolweave-read-only`` declares every tool read-only
(`toolweave.integrations.READ_ONLY`): calls overlap as the SDK's own do.
See ``../upstream_harness.py`` for how the two runs are compared.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from upstream_harness import (
    Swap,
    configure_swaps,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_report_header,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

__all__ = [
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_report_header",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
]


def _scheduling_post_init(original: Any, *, read_only: bool = False) -> Any:
    from toolweave.integrations import READ_ONLY
    from toolweave.integrations.openai_agents import scheduled_tools

    def __post_init__(self: Any) -> None:
        original(self)
        declarations = (
            {tool.name: READ_ONLY for tool in self.tools} if read_only else None
        )
        self.tools = scheduled_tools(self.tools, declarations)

    return __post_init__


def _read_only_post_init(original: Any) -> Any:
    return _scheduling_post_init(original, read_only=True)


SWAPS = [Swap("agents.agent", "Agent.__post_init__", _scheduling_post_init)]
READ_ONLY_SWAPS = [Swap("agents.agent", "Agent.__post_init__", _read_only_post_init)]


def pytest_configure(config: pytest.Config) -> None:
    configure_swaps(
        config, SWAPS, prefixes=("agents.", "tests."), read_only_swaps=READ_ONLY_SWAPS
    )
