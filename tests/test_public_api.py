"""The public API is what the packages re-export; DESIGN.md's names are fixed."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import toolweave as tw
from extras import require_extra

PUBLIC_PACKAGES = [
    "toolweave",
    "toolweave.tools",
    "toolweave.scheduling",
    "toolweave.execution",
    "toolweave.models",
    "toolweave.loop",
    "toolweave.testing",
    "toolweave.integrations",
    "toolweave.integrations.langgraph",
    "toolweave.integrations.pydantic_ai",
    "toolweave.integrations.openai_agents",
]

DESIGN_NAMES = [
    "ToolCall",
    "ToolResult",
    "Concurrency",
    "Interrupt",
    "Access",
    "tool",
    "ToolRegistry",
    "ConcurrencyConfig",
    "Dispatcher",
    "Agent",
    "AgentConfig",
    "RunResult",
    "StopReason",
    "CompletionReason",
    "Text",
    "Thinking",
    "Message",
    "ModelResponse",
    "Usage",
]


@pytest.mark.parametrize("module_name", PUBLIC_PACKAGES)
def test_all_is_sorted_and_names_exist(module_name: str) -> None:
    framework = module_name.removeprefix("toolweave.integrations.")
    if framework != module_name:
        require_extra(framework.replace("_", "-"))
    module = importlib.import_module(module_name)
    exported = module.__all__

    def isort_key(
        name: str,
    ) -> tuple[int, str]:  # ruff RUF022: CONSTANTS, Classes, functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert exported == sorted(exported, key=isort_key)
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} is in __all__ but missing"


@pytest.mark.parametrize("name", DESIGN_NAMES)
def test_design_names_import(name: str) -> None:
    assert hasattr(tw, name), name
    assert name in tw.__all__


def test_wave_two_names_import() -> None:
    from toolweave.events import DeclarationViolation
    from toolweave.testing import check_declarations

    assert tw.AgentConfig(audit="warn").audit == "warn"
    assert DeclarationViolation.__module__ == "toolweave.events"
    assert callable(check_declarations)


def test_design_member_names() -> None:
    assert {c.name for c in tw.Concurrency} == {"SAFE", "SEQUENTIAL"}
    assert {c.name for c in tw.Interrupt} == {"CANCEL", "BLOCK"}
    assert {c.name for c in tw.StopReason} == {
        "END_TURN",
        "TOOL_USE",
        "MAX_TOKENS",
        "STOP_SEQUENCE",
        "REFUSAL",
        "UNKNOWN",
    }
    assert {c.name for c in tw.CompletionReason} == {
        "COMPLETED",
        "TRUNCATED",
        "MAX_ITERATIONS",
        "BUDGET_EXCEEDED",
        "COST_BUDGET_EXCEEDED",
        "ERROR",
        "INTERRUPTED",
        "HOOK_STOPPED",
        "CONTEXT_WINDOW_EXCEEDED",  # issue 29: a request that cannot fit is not sent
        "SUSPENDED",  # issue 29: the run waits for a person's decision
    }
    for name in (
        "ScriptedModel",
        "AnthropicModel",
        "OpenAIChatModel",
        "OpenAIResponsesModel",
    ):
        assert hasattr(tw.models, name), name
    assert callable(tw.tools.coding_tools)


def test_design_signatures() -> None:
    call = tw.ToolCall("id", "name", {"a": 1})
    result = tw.ToolResult("id", "content", True, True)
    assert (result.is_error, result.synthetic) == (True, True)
    assert call.input == {"a": 1}
    config = tw.ConcurrencyConfig(
        enabled=True,
        max_concurrency=10,
        per_batch_max=None,
        policy="conflict",
        streaming_overlap=True,
    )
    assert config.max_concurrency == 10
    response = tw.ModelResponse(
        [tw.Text("hi")],
        stop_reason=tw.StopReason.END_TURN,
        usage=tw.Usage(input_tokens=0, output_tokens=0),
    )
    assert response.text == "hi"
    assert tw.AgentConfig().max_iterations == 50


def test_synthetic_results_are_always_errors() -> None:
    assert tw.ToolResult("x", "never ran", synthetic=True).is_error


def test_every_private_module_has_a_docstring() -> None:
    missing = []
    for info in pkgutil.walk_packages(tw.__path__, "toolweave."):
        try:
            module = importlib.import_module(info.name)
        except tw.MissingExtraError:  # its extra is absent: read the docstring
            spec = importlib.util.find_spec(info.name)
            assert spec is not None and spec.origin is not None
            tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
            doc = ast.get_docstring(tree)
        else:
            doc = module.__doc__
        if not (doc or "").strip():
            missing.append(info.name)
    assert missing == []
