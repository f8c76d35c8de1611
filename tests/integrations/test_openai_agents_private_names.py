"""The Agents SDK's private names `toolweave.integrations.openai_agents` relies on.

The SDK (0.22.3 to 0.24) has no public way to wrap a `@function_tool`'s body while
keeping its own invoker (argument preparation for approval policies, failure
handling, rebinding on copies), so the integration uses five private names of
``agents.tool`` and two private attributes. The extra pins the SDK to the range
tested (``openai-agents>=0.22.3,<0.25``, pyproject.toml; CI runs these at both
ends, .ci/extras-range); these tests pin each name's shape and what the SDK does
with it, so an SDK release that moves one fails here, by name, before it fails a
user's run.
"""

from __future__ import annotations

import dataclasses
import inspect
from importlib.metadata import version
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

pytest.importorskip("agents")

from agents import FunctionTool, RunContextWrapper, function_tool
from agents import tool as sdk_tool
from agents.tool_context import ToolContext

from toolweave.integrations import openai_agents as ours

pytestmark = pytest.mark.anyio

TESTED = SpecifierSet(">=0.22.3,<0.25")
"""The SDK releases the names below are pinned for (pyproject.toml's extra)."""


def _tool() -> FunctionTool:
    @function_tool
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    return double


def _context(tool: FunctionTool, arguments: str = '{"x": 2}') -> ToolContext[Any]:
    return ToolContext(
        context=None, tool_name=tool.name, tool_call_id="c1", tool_arguments=arguments
    )


def test_the_installed_sdk_is_in_the_pinned_range() -> None:
    assert version("openai-agents") in TESTED


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("_DEFAULT_FAILURE_HANDLED_ATTR", "_function_tool_default_failure_handled"),
        (
            "_FUNCTION_TOOL_WRAPPED_CALLABLE_MARKER",
            "__agents_function_tool_wrapped_callable__",
        ),
        ("_SYNC_FUNCTION_TOOL_MARKER", "__agents_sync_function_tool__"),
    ],
)
def test_marker_names_are_the_strings_the_sdk_reads(name: str, value: str) -> None:
    assert getattr(sdk_tool, name) == value
    assert getattr(ours, name) == value  # the integration imports the same object


def test_failure_handling_invoker_shape() -> None:
    invoker_class = sdk_tool._FailureHandlingFunctionToolInvoker
    parameters = inspect.signature(invoker_class).parameters
    assert list(parameters)[:2] == ["invoke_tool_impl", "on_handled_error"]
    tool = _tool()
    invoker = tool.on_invoke_tool
    assert isinstance(invoker, invoker_class)
    assert callable(invoker._invoke_tool_impl)
    assert callable(invoker._on_handled_error)
    # the implementation carries the approval-time argument preparation
    assert callable(getattr(invoker._invoke_tool_impl, ours._PREPARE_MARKER))
    bound = invoker.__agents_bind_function_tool__(tool)
    assert bound is invoker  # already bound to this tool
    copy = dataclasses.replace(tool)
    assert isinstance(copy.on_invoke_tool, invoker_class)
    assert copy.on_invoke_tool is not invoker  # rebound to the copy
    assert copy.on_invoke_tool._invoke_tool_impl is invoker._invoke_tool_impl


def test_sync_marker_is_set_on_a_sync_function_tools_invoker() -> None:
    invoker = _tool().on_invoke_tool
    assert getattr(invoker, sdk_tool._SYNC_FUNCTION_TOOL_MARKER, False) is True


def test_invoke_context_chooser_shape() -> None:
    chooser = sdk_tool._get_function_tool_invoke_context
    assert list(inspect.signature(chooser).parameters) == ["function_tool", "context"]

    async def wants_wrapper(ctx: RunContextWrapper[Any], input_json: str) -> str:
        return input_json

    async def wants_tool_context(ctx: ToolContext[Any], input_json: str) -> str:
        return input_json

    schema: dict[str, Any] = {"type": "object", "properties": {}}
    plain = FunctionTool("w", "", schema, wants_wrapper)
    rich = FunctionTool("t", "", schema, wants_tool_context)
    context = _context(plain)
    assert type(chooser(plain, context)) is RunContextWrapper
    assert chooser(rich, context) is context


async def test_tool_context_has_the_prepared_arguments_slot() -> None:
    tool = _tool()
    context = _context(tool)
    assert context._function_tool_arguments is None
    assert await tool.on_invoke_tool(context, '{"x": 2}') == 4


async def test_default_failure_answer_marks_the_context() -> None:
    @function_tool
    def broken(x: int) -> int:
        """Fail."""
        raise ValueError("no")

    context = _context(broken)
    answer = await broken.on_invoke_tool(context, '{"x": 1}')
    # the SDK's own default text (0.24 leaves the exception out, 0.22 names it)
    assert answer == sdk_tool.default_tool_error_function(context, ValueError("no"))
    assert answer.startswith("An error occurred while running the tool.")
    # the SDK reads (and resets) the mark when it builds the tool's output
    assert getattr(context, sdk_tool._DEFAULT_FAILURE_HANDLED_ATTR) is True
