"""PydanticAI's tool and toolset tests, with toolweave's `ScheduledToolset` swapped in.

``--swap=toolweave`` makes every agent run schedule its tools as a user would
write ``Agent(..., toolsets=[ScheduledToolset(toolset)])``: each toolset the agent
runs with (its function toolset, the user's, the dynamic and capability ones) is
wrapped in `ScheduledToolset` with its defaults (every tool undeclared, so
``sequential=True``; ``on_error="raise"``). Only the toolsets of a run are
wrapped (`Agent._get_toolset`), not what `Agent.toolsets` lists, which is what the
user passed in. See ``../upstream_harness.py`` for how the two runs are compared.

``BLOCKBUSTER_ENABLED=false``: upstream's blocking-call detector is off, as on all
but one lane of its own CI (it is a check of pydantic-ai's own code, not of tools).
"""

from __future__ import annotations

import contextvars
import os
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

os.environ.setdefault("BLOCKBUSTER_ENABLED", "false")

_IN_RUN_TOOLSET = contextvars.ContextVar("_IN_RUN_TOOLSET", default=False)


def _marking_get_toolset(original: Any) -> Any:
    def _get_toolset(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _IN_RUN_TOOLSET.set(True)
        try:
            return original(self, *args, **kwargs)
        finally:
            _IN_RUN_TOOLSET.reset(token)

    return _get_toolset


def _scheduling_toolset_list(original: Any) -> Any:
    from toolweave.integrations.pydantic_ai import ScheduledToolset

    def _build_toolset_list(self: Any, *args: Any, **kwargs: Any) -> Any:
        toolsets = original(self, *args, **kwargs)
        if not _IN_RUN_TOOLSET.get():
            return toolsets
        return [
            t if isinstance(t, ScheduledToolset) else ScheduledToolset(t)
            for t in toolsets
        ]

    return _build_toolset_list


SWAPS = [
    Swap("pydantic_ai.agent", "Agent._get_toolset", _marking_get_toolset),
    Swap("pydantic_ai.agent", "Agent._build_toolset_list", _scheduling_toolset_list),
]


def pytest_configure(config: pytest.Config) -> None:
    configure_swaps(config, SWAPS, prefixes=("pydantic_ai.", "tests."))
