"""LangGraph's prebuilt tests, with toolweave's `ScheduledToolNode` swapped in on demand.

``--swap=toolweave`` replaces `langgraph.prebuilt.ToolNode` (and every alias of it,
so `create_react_agent` builds ours too) with `ScheduledToolNode`, constructed with
its defaults: every tool undeclared (a barrier), ``on_error="answer"``. See
``../upstream_harness.py`` for how the two runs are compared.
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


def _scheduled_tool_node(original: Any) -> Any:
    from toolweave.integrations.langgraph import ScheduledToolNode

    assert issubclass(ScheduledToolNode, original)
    return ScheduledToolNode


SWAPS = [Swap("langgraph.prebuilt.tool_node", "ToolNode", _scheduled_tool_node)]


def pytest_configure(config: pytest.Config) -> None:
    configure_swaps(config, SWAPS, prefixes=("langgraph.", "langchain.", "tests."))
