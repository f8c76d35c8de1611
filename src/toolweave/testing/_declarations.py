"""check_declarations: run a tool on sample inputs under the audit in enforce mode."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import anyio

from .._exceptions import UsageError
from ..events import DeclarationViolation, Event, ToolRunning
from ..execution import PermissionMode, ToolRunner
from ..messages import ToolCall
from ..tools import SessionState, Tool, ToolRegistry

__all__ = [
    "assert_declarations_honest",
    "check_declarations",
    "check_declarations_async",
]


async def check_declarations_async(
    tool: Tool,
    inputs: Iterable[Mapping[str, Any]],
    *,
    state: SessionState | None = None,
) -> list[DeclarationViolation]:
    """Run `tool` once per input, one after the other, in enforce mode; return the violations.

    Each operation outside the declaration is stopped (PermissionError inside
    the tool) and returned, in order; an empty list means the tool kept to
    what it declared *on these inputs* (the audit sees what runs, so give
    inputs that reach every branch that writes, spawns or connects).
    Permission asks are approved (BYPASS). A checkpoint.

    Raises:
        UsageError: if an input never reached the tool (unknown to its schema,
            refused by `validate_input` or a deny): that input checked nothing.
    """
    events: list[Event] = []
    runner = ToolRunner(
        ToolRegistry([tool]),
        state=state or SessionState(),
        mode=PermissionMode.BYPASS,
        on_event=events.append,
        audit="enforce",
    )
    if tool.needs_prepare:
        await tool.prepare()
    for index, raw in enumerate(inputs):
        call = ToolCall(f"check-{index}", tool.name, dict(raw))
        result = await runner(call)
        if not any(isinstance(e, ToolRunning) and e.call_id == call.id for e in events):
            raise UsageError(
                f"input #{index} never reached tool {tool.name!r}, so it checked"
                f" nothing: {result.text}"
            )
    return [e for e in events if isinstance(e, DeclarationViolation)]


def check_declarations(
    tool: Tool,
    inputs: Iterable[Mapping[str, Any]],
    *,
    state: SessionState | None = None,
    backend: Literal["asyncio", "trio"] = "asyncio",
) -> list[DeclarationViolation]:
    """`check_declarations_async` from synchronous code (a plain pytest test).

    Starts an event loop of `backend`, so call it outside one; inside async
    code await `check_declarations_async` instead.

    Example:
        >>> def test_my_tools_declare_what_they_do(tmp_path):
        ...     assert check_declarations(save_note, [{"text": "hi"}]) == []
    """
    return anyio.run(
        lambda: check_declarations_async(tool, inputs, state=state), backend=backend
    )


def assert_declarations_honest(
    tool: Tool,
    inputs: Iterable[Mapping[str, Any]],
    *,
    state: SessionState | None = None,
    backend: Literal["asyncio", "trio"] = "asyncio",
) -> None:
    """Fail (AssertionError) with one line per violation if `tool` breaks its declaration.

    For pytest: ``assert_declarations_honest(my_tool, [{"path": "a.txt"}])``.
    """
    found = check_declarations(tool, inputs, state=state, backend=backend)
    if found:
        lines = "\n".join(
            f"- {v.operation} {v.target}"
            + (f" at {v.source}" if v.source else "")
            + f": {v.reason}"
            for v in found
        )
        raise AssertionError(
            f"tool {tool.name!r} does what it does not declare:\n{lines}"
        )
