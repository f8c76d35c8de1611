"""Each integration module imports with the other two frameworks absent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from extras import require_extra

FRAMEWORKS = {
    "langgraph": ("langgraph", "langchain_core"),
    "pydantic_ai": ("pydantic_ai",),
    "openai_agents": ("agents",),
}

BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked")
        return None
sys.meta_path.insert(0, Block())
import toolweave.integrations.{module} as m
assert m.__all__
"""


@pytest.mark.parametrize("module", sorted(FRAMEWORKS))
def test_module_imports_without_the_other_frameworks(module: str) -> None:
    require_extra(module.replace("_", "-"))
    blocked = {
        top for name, tops in FRAMEWORKS.items() if name != module for top in tops
    }
    code = BLOCKER.format(blocked=sorted(blocked), module=module)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_package_imports_no_framework() -> None:
    code = BLOCKER.format(
        blocked=sorted({t for tops in FRAMEWORKS.values() for t in tops}),
        module="_declaration",
    ).replace("assert m.__all__", "import toolweave.integrations")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_langgraph_module_imports_without_langchain_and_names_it_for_the_middleware() -> (
    None
):
    """ScheduledToolNode needs no langchain; ScheduledToolMiddleware says what it needs."""
    require_extra("langgraph")
    code = BLOCKER.format(blocked=["langchain"], module="langgraph") + (
        "from toolweave import MissingExtraError\n"
        "assert m.ScheduledToolNode\n"
        "try:\n"
        "    m.ScheduledToolMiddleware\n"
        "except MissingExtraError as exc:\n"
        "    assert 'toolweave[langgraph]' in str(exc) and 'langchain' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('no error')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
