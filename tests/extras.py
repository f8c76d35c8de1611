"""Tests of an optional feature need its extra: absent, they skip saying which; in CI, they fail.

The ``test`` extra holds what the core suite needs; the frameworks (LangGraph,
PydanticAI, the OpenAI Agents SDK) and Ray are their own extras, which
``.ci/setup-extras`` installs. A developer without one sees the tests skipped
with the command that installs it; CI (``CI=true``) must run every test, so
there a missing extra is a failure, never a silent skip (as the llama tests do).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "langgraph": ("langgraph", "langchain_core"),
    "pydantic-ai": ("pydantic_ai",),
    "openai-agents": ("agents",),
    "ray": ("ray",),
}
"""Each extra, and the top-level modules whose absence means it is not installed."""

EXTRA_OF_FILE: dict[str, str] = {
    "test_langgraph.py": "langgraph",
    "test_langgraph_fidelity.py": "langgraph",
    "test_pydantic_ai.py": "pydantic-ai",
    "test_pydantic_ai_fidelity.py": "pydantic-ai",
    "test_pydantic_ai_deferred.py": "pydantic-ai",
    "test_pydantic_ai_mcp.py": "pydantic-ai",
    "test_openai_agents.py": "openai-agents",
    "test_openai_agents_fidelity.py": "openai-agents",
    "test_openai_agents_approvals.py": "openai-agents",
}
"""Test modules that import a framework at the top, so need its extra to be collected."""


def missing_extra(extra: str) -> str | None:
    """Why the tests of `extra` cannot run here, or None when they can."""
    absent = [m for m in EXTRA_MODULES[extra] if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    return (
        f"the {extra!r} extra is not installed ({', '.join(absent)} missing):"
        f" pip install -e '.[test,{extra}]'"
    )


def require_extra(extra: str) -> None:
    """Skip the calling test (or module) unless `extra` is installed; in CI, fail."""
    reason = missing_extra(extra)
    if reason is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run every test: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


class ModuleNeedingExtra(pytest.Module):
    """A test module that is collected only once its extra is known to be there."""

    extra = ""

    def collect(self):  # type: ignore[no-untyped-def]
        require_extra(self.extra)
        return super().collect()


def module_needing_extra(path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The collector for `path` when it needs an extra (see `EXTRA_OF_FILE`), else None."""
    extra = EXTRA_OF_FILE.get(path.name)
    if extra is None or missing_extra(extra) is None:
        return None
    module = ModuleNeedingExtra.from_parent(parent, path=path)
    module.extra = extra
    return module
