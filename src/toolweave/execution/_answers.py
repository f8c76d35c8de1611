"""The lifecycle's own answers, in one wording each, whichever path a call took.

Both of a runner's paths (`_plain` and `_staged`) and every stage answer
through these: a refusal, a cut, an unknown tool, a tool's output mapped to a
result. Nothing here awaits or keeps state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .._exceptions import ToolInputError
from ..messages import ToolCall, ToolResult
from ..tools import Tool, ToolRegistry
from ._output import Content, empty_placeholder, is_empty, to_content, utf8_safe
from ._signals import CallFailed

__all__ = [
    "Answered",
    "cut_before_start",
    "finished",
    "internal_error",
    "mapped",
    "parsed",
    "post_hooks_cut",
    "refused",
    "unknown_tool",
]

logger = logging.getLogger("toolweave.execution")

PRE_HOOKS_CUT = (
    "Stopped while its PreToolUse hooks ran: the tool {tool!r} never started,"
    " so it had no effect."
)
BARRIER_CUT = (
    "Not run: interrupted while its start was being recorded; the tool {tool!r}"
    " never started, so it had no effect."
)
_POST_HOOKS_CUT = (
    "Interrupted after the tool {tool!r} finished, while its PostToolUse hooks ran:"
    " its effects happened, but its output is withheld because the hooks that"
    " check it did not finish."
)
_MAX_LISTED_TOOLS = 20


class Answered(Exception):
    """Internal: a stage answered the call with `result` (the rest is skipped)."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.text)
        self.result = result


def parsed(tool: Tool, call: ToolCall) -> dict[str, object]:
    """The call's validated input; raises `CallFailed` saying what is wrong with it."""
    if call.raw_arguments is not None:
        shown = call.raw_arguments[:200]
        raise CallFailed(
            f"The arguments for tool {tool.name!r} are not valid JSON: {shown!r}."
            " Send a JSON object that matches the tool's input schema."
        )
    try:
        return tool.parse(call.input)
    except ToolInputError as exc:
        raise CallFailed(str(exc)) from exc
    except Exception as exc:
        raise CallFailed(
            f"Invalid input for tool {tool.name!r}: {type(exc).__name__}: {exc}."
            " The input must be a JSON object that matches the tool's schema."
        ) from exc


def unknown_tool(registry: ToolRegistry, call: ToolCall) -> CallFailed:
    """The answer to a call of a tool `registry` does not have (the closest named)."""
    message = f"Unknown tool {call.name!r}."
    close = [
        name
        for name in registry.closest(call.name)
        if not getattr(registry.get(name), "hidden", True)
    ]
    if close:
        message += " Did you mean: " + ", ".join(repr(n) for n in close) + "?"
    known = [t.name for t in registry.visible()][:_MAX_LISTED_TOOLS]
    message += " Available tools: " + (", ".join(known) or "(none)") + "."
    return CallFailed(message)


def cut_before_start(template: str, tool: Tool, call: ToolCall) -> Answered:
    """A call cut before its tool started (`PRE_HOOKS_CUT`, `BARRIER_CUT`): no effect."""
    message = template.format(tool=tool.name)
    return Answered(ToolResult(call.id, message, is_error=True, synthetic=True))


def post_hooks_cut(
    tool: Tool, call: ToolCall, modifier: Callable[[], object] | None
) -> ToolResult:
    """A call cut after its tool finished, in the steps after it: fail closed.

    The tool ran, so its context change is kept; its output is withheld (a
    hook that did not finish may have had to redact it).
    """
    text = _POST_HOOKS_CUT.format(tool=tool.name)
    return ToolResult(call.id, text, is_error=True, context_modifier=modifier)


def refused(call: ToolCall, failed: CallFailed) -> ToolResult:
    """The result of a call a stage ended with `failed`."""
    return ToolResult(
        call.id,
        failed.message,
        is_error=True,
        synthetic=failed.synthetic,
        context_modifier=failed.modifier,
    )


def internal_error(call: ToolCall, exc: Exception) -> ToolResult:
    """A bug in toolweave must not break the batch: the call's error says so."""
    logger.exception("internal error while running call %s", call.id, exc_info=exc)
    message = f"Internal error in toolweave while running this call: {exc!r}"
    return ToolResult(call.id, message, is_error=True)


def mapped(
    tool: Tool,
    call: ToolCall,
    output: object,
    modifier: Callable[[], object] | None,
) -> ToolResult:
    """A tool's output as the call's result: mapped to content, an empty one padded."""
    if type(output) is str:  # most tools: no mapping needed
        if output.strip():
            return ToolResult(call.id, output, False, context_modifier=modifier)
        padded = empty_placeholder(tool.name)
        return ToolResult(call.id, padded, False, context_modifier=modifier)
    content: Content
    content, is_error = to_content(output)
    if is_empty(content):
        content = empty_placeholder(tool.name)
    return ToolResult(call.id, content, is_error, context_modifier=modifier)


def finished(result: ToolResult) -> ToolResult:
    """`result` with text that encodes as UTF-8 (every answer leaves the runner so)."""
    content = result.content
    if type(content) is str and content.isascii():
        return result  # utf8_safe's common case, without the call
    return utf8_safe(result)
