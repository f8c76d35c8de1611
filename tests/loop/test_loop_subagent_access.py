"""Sub-agents fail closed (issue 13 item 10): a call claims the union of its tools' access.

Read-only children overlap (proved by rendezvous: both are inside their tool
at once); a child that can write runs alone (while it waits for every other
task to block, no other child is inside).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from loop_support import call, say, use

from toolweave.events import CompletionReason
from toolweave.loop import Agent, subagent
from toolweave.messages import ModelResponse, ToolCall
from toolweave.models import ModelRequest, ScriptedModel
from toolweave.scheduling import classify
from toolweave.tools import Access, Concurrency, Tool, ToolContext, ToolRegistry, tool
from toolweave.tools.builtin import (
    BashTool,
    EditTool,
    GlobTool,
    GrepTool,
    ReadTool,
    TodoReadTool,
    TodoWriteTool,
    WebFetchTool,
    WriteTool,
    coding_tools,
)

pytestmark = pytest.mark.anyio


def _child_model(tool_name: str, n: int) -> ScriptedModel:
    """Each child run: one call of `tool_name`, then an answer (any interleaving)."""

    def step(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if last.tool_results:
            (result,) = last.tool_results
            assert not result.is_error, result.content
            return say(f"done {request.messages[0].text}")
        return use(call(f"c-{request.messages[0].text}", tool_name))

    return ScriptedModel([step] * (2 * n))


def _plan(sub: Tool) -> tuple[bool, Access]:
    plan = classify(ToolCall("x", sub.name, {"prompt": "p"}), ToolRegistry([sub]))
    return plan.parallel_ok, plan.access


@tool(concurrency=Concurrency.SAFE, access=lambda a: Access(reads=("db:t",)))
async def unbounded_reader() -> str:
    """SAFE, but its access depends on input and it gives no bound."""
    return "r"


@tool(
    concurrency=Concurrency.SAFE,
    access=lambda a: Access(reads=("db:t",)),
    access_bound=Access(reads=("db:",)),
)
async def bounded_reader() -> str:
    """SAFE with a declared bound."""
    return "r"


@tool(concurrency=Concurrency.SAFE, access=Access(reads=("kb:",)))
async def constant_reader() -> str:
    """SAFE with a constant access: that is its bound."""
    return "r"


@tool(concurrency=Concurrency.SEQUENTIAL, access=Access(writes=("kb:",)))
async def constant_writer() -> str:
    """SEQUENTIAL with a constant write."""
    return "w"


@tool(concurrency=Concurrency.SEQUENTIAL, access=Access(reads=("kb:",)))
async def sequential_reader() -> str:
    """SEQUENTIAL yet claiming only a read: not trusted as read-only."""
    return "r"


@tool(concurrency=lambda a: True, access=Access(reads=("kb:",)))
async def input_dependent() -> str:
    """Concurrency depends on input."""
    return "r"


@tool(concurrency=Concurrency.SAFE)
async def undeclared_safe() -> str:
    """SAFE, no access declared: reads everything."""
    return "r"


def _sub(tools: list[Tool], **options: Any) -> Tool:
    return subagent("kid", "a child", model=ScriptedModel([]), tools=tools, **options)


def test_the_claim_is_the_union_of_the_tools_bounds(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    fs, todo = f"fs:{root}", "todo:"
    readers: list[Tool] = [
        ReadTool(root),
        GlobTool(root),
        GrepTool(root, ripgrep=False),
        WebFetchTool(),
        TodoReadTool(),
    ]
    by_name: dict[str, Tool] = {
        "edit": EditTool(root),
        "write": WriteTool(root),
        "todo_write": TodoWriteTool(),
        "bash": BashTool(root),
    }
    table: list[tuple[list[Tool], dict[str, Any], bool, Access]] = [
        ([], {}, True, Access()),
        (
            [GrepTool(root, ripgrep="/usr/bin/rg")],
            {},
            True,
            Access(reads=(fs, "proc:rg")),
        ),
        (readers, {}, True, Access(reads=(fs, "net:", todo))),
        ([bounded_reader], {}, True, Access(reads=("db:",))),
        ([undeclared_safe], {}, True, Access(reads=("*",))),
        ([constant_reader], {}, True, Access(reads=("kb:",))),
        ([constant_writer], {}, False, Access(writes=("kb:",))),
        ([sequential_reader], {}, False, Access.barrier()),
        ([input_dependent], {}, False, Access.barrier()),
        (
            [*readers, by_name["edit"]],
            {},
            False,
            Access(reads=(fs, "net:", todo), writes=(fs,)),
        ),
        ([by_name["todo_write"]], {}, False, Access(writes=(todo,))),
        (
            [*readers, by_name["bash"]],
            {},
            False,
            Access(reads=(fs, "net:", todo), writes=("*",)),
        ),
        ([unbounded_reader], {}, False, Access.barrier()),
        (readers, {"concurrency": Concurrency.SEQUENTIAL}, False, Access.barrier()),
        (
            readers,
            {"concurrency": Concurrency.SAFE},
            True,
            Access(reads=(fs, "net:", todo)),
        ),
        (
            [by_name["write"]],
            {"concurrency": Concurrency.SAFE},
            False,
            Access(writes=(fs,)),
        ),
        ([_sub(readers)], {}, True, Access(reads=(fs, "net:", todo))),  # nested
        ([_sub([by_name["edit"]])], {}, False, Access(writes=(fs,))),
    ]
    for tools, options, parallel, access in table:
        got = _plan(_sub(tools, **options))
        assert got == (parallel, access), ([t.name for t in tools], options)


def test_a_tool_registered_later_widens_the_next_claim(tmp_path: Path) -> None:
    registry = ToolRegistry([t for t in coding_tools(tmp_path) if t.name == "read"])
    sub = subagent("kid", "a child", model=ScriptedModel([]), tools=registry)
    assert _plan(sub)[0] is True
    registry.register(next(t for t in coding_tools(tmp_path) if t.name == "write"))
    assert _plan(sub)[0] is False


class Room:
    """Counts the children inside their tool; `both_in` is set when two are."""

    def __init__(self) -> None:
        self.inside: set[str] = set()
        self.both_in = anyio.Event()
        self.company: dict[str, set[str]] = {}


async def test_read_only_children_are_inside_at_once() -> None:
    room = Room()

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(reads=("kb:",)),
        access_bound=Access(reads=("kb:",)),
    )
    async def look(ctx: ToolContext) -> str:
        """Wait inside until the other child is inside too."""
        room.inside.add(ctx.call_id)
        if len(room.inside) == 2:
            room.both_in.set()
        with anyio.fail_after(30):  # a serial schedule would wait here forever
            await room.both_in.wait()
        return "seen"

    kids = subagent("kid", "a reader", model=_child_model("look", 2), tools=[look])
    parent = ScriptedModel(
        [
            use(call("k1", "kid", prompt="one"), call("k2", "kid", prompt="two")),
            say("ok"),
        ]
    )
    result = await Agent(parent, [kids]).run("go")
    assert result.completion_reason is CompletionReason.COMPLETED
    assert room.inside == {"c-one", "c-two"}
    assert [r.content for r in result.messages[2].tool_results] == [
        "done one",
        "done two",
    ]


async def test_a_writing_child_runs_alone() -> None:
    room = Room()

    async def enter(tag: str) -> str:
        room.company[tag] = set(room.inside)
        room.inside.add(tag)
        await anyio.wait_all_tasks_blocked()  # anyone allowed in gets in now
        room.company[tag] |= room.inside - {tag}
        room.inside.discard(tag)
        return "done"

    @tool(
        concurrency=Concurrency.SEQUENTIAL,
        access=lambda a: Access(writes=("kb:",)),
        access_bound=Access(writes=("kb:",)),
    )
    async def change(ctx: ToolContext) -> str:
        """Write the knowledge base."""
        return await enter(ctx.call_id)

    @tool(
        concurrency=Concurrency.SAFE,
        access=lambda a: Access(reads=("kb:",)),
        access_bound=Access(reads=("kb:",)),
    )
    async def look(ctx: ToolContext) -> str:
        """Read the knowledge base."""
        return await enter(ctx.call_id)

    writer = subagent(
        "writer", "writes", model=_child_model("change", 2), tools=[change]
    )
    reader = subagent("reader", "reads", model=_child_model("look", 1), tools=[look])
    parent = ScriptedModel(
        [
            use(
                call("w1", "writer", prompt="w1"),
                call("r1", "reader", prompt="r1"),
                call("w2", "writer", prompt="w2"),
            ),
            say("ok"),
        ]
    )
    result = await Agent(parent, [writer, reader]).run("go")
    assert result.completion_reason is CompletionReason.COMPLETED
    assert room.company == {"c-w1": set(), "c-r1": set(), "c-w2": set()}
    contents = [r.content for r in result.messages[2].tool_results]
    assert contents == ["done w1", "done r1", "done w2"]
