"""`import toolweave` loads no provider SDK, MCP, Ray, CLI library, parser or integration.

Structural, not timed: a fresh interpreter imports the package and reports
which heavy modules landed in `sys.modules`. The lazy re-exports must still
resolve every public name (and load the heavy module only then).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "anthropic",
    "openai",
    "mcp",
    "ray",
    "rich",
    "typer",
    "click",
    "tree_sitter",
    "httpx",
    "jsonschema",
    "pydantic_ai",
    "langgraph",
    "langchain_core",
)


def loaded_after(code: str) -> set[str]:
    """The HEAVY top-level modules present in `sys.modules` after running `code`."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_toolweave_loads_nothing_heavy() -> None:
    assert loaded_after("import toolweave") == set()


def test_an_agent_run_with_a_scripted_model_loads_nothing_heavy() -> None:
    code = (
        "import toolweave as tw\n"
        "@tw.tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n"
        "model = tw.models.ScriptedModel([\n"
        "    tw.ModelResponse([tw.ToolCall('c', 'add', {'a': 1, 'b': 2})],"
        " tw.StopReason.TOOL_USE),\n"
        "    tw.ModelResponse([tw.Text('3')], tw.StopReason.END_TURN)])\n"
        "assert tw.Agent(model, [add]).run_sync('go').ok\n"
    )
    assert loaded_after(code) == set()


@pytest.mark.parametrize(
    "code",
    [
        "from toolweave.tools import coding_tools; coding_tools('.')",
        "from toolweave.tools.builtin import WebFetchTool; WebFetchTool()",
        "from toolweave.tools.mcp import MCPServerConfig",
    ],
)
def test_building_tools_loads_nothing_heavy(code: str) -> None:
    assert loaded_after(code) == set()


@pytest.mark.parametrize(
    ("code", "heavy"),
    [
        (
            "from toolweave.tools.builtin import classify_bash; classify_bash('ls')",
            "tree_sitter",
        ),
        ("from toolweave.tools.mcp import open_mcp_servers", "mcp"),
    ],
)
def test_lazy_names_load_their_module_on_first_use(code: str, heavy: str) -> None:
    assert heavy in loaded_after(code)


def test_every_lazy_name_resolves_and_is_listed() -> None:
    import toolweave.tools as tools
    import toolweave.tools.builtin as builtin
    import toolweave.tools.mcp as mcp_tools

    for package in (tools, builtin, mcp_tools):
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
            assert name in dir(package)
    assert tools.coding_tools is builtin.coding_tools


def test_an_unknown_name_is_an_attribute_error() -> None:
    import toolweave.tools.builtin as builtin

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = builtin.nope  # type: ignore[attr-defined]
