"""Test helpers for the execution lifecycle: a session, event capture, batch drivers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from toolweave.events import Event
from toolweave.execution import (
    AskAnswer,
    AskHandler,
    ExecutionConfig,
    PermissionRules,
    RunDeadline,
    ToolRunner,
)
from toolweave.messages import ToolCall, ToolResult
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken
from toolweave.tools import Access, Concurrency, SessionState, ToolRegistry, tool


def make_state(tmp_path: Path) -> SessionState:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return SessionState(workspace=workspace, results_dir=tmp_path / "session")


class Events:
    """An on_event listener that keeps what it was given."""

    def __init__(self) -> None:
        self.items: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.items.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.items if isinstance(e, kind)]


def audit_runner(
    tmp_path: Path, tools: Sequence[Any], audit: str, events: Events
) -> ToolRunner:
    """A runner auditing `tools` in `audit` mode, its events kept in `events`.

    No default timeout: the audit tests run real threads and processes, and on
    trio's MockClock a pending timeout is jumped to while they work.
    """
    return ToolRunner(
        ToolRegistry(list(tools)),
        state=make_state(tmp_path),
        on_event=events,
        audit=audit,  # type: ignore[arg-type]
        config=ExecutionConfig(default_timeout=None),
    )


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
async def echo(text: str) -> str:
    """Return the text."""
    return text


@tool(concurrency=Concurrency.SAFE, access=lambda args: Access(), aliases=("say",))
async def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


def registry_with(*extra: Any) -> ToolRegistry:
    return ToolRegistry([echo, shout, *extra])


def call(call_id: str, tool_name: str, /, **args: Any) -> ToolCall:
    return ToolCall(call_id, tool_name, args)


async def run_concurrently(
    runner: ToolRunner, calls: Sequence[ToolCall]
) -> list[ToolResult]:
    """Drive calls at once in a task group (what a Dispatcher does for SAFE calls)."""
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int, item: ToolCall) -> None:
        results[index] = await runner(item)

    async with anyio.create_task_group() as tg:
        for index, item in enumerate(calls):
            tg.start_soon(one, index, item)
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


async def dispatch(
    runner: ToolRunner, registry: ToolRegistry, calls: Sequence[ToolCall]
) -> list[ToolResult]:
    """Run a batch through the real Dispatcher and the runner's batch budget.

    The Dispatcher's per-call ceiling is off: these tests exercise the
    lifecycle's own timeouts, and on trio's MockClock a pending ceiling is jumped
    to whenever a tool waits on a real thread.
    """
    config = ConcurrencyConfig(max_concurrency=8, default_tool_timeout=None)
    async with Dispatcher(config) as dispatcher:
        results = await dispatcher.dispatch(calls, registry, runner)
    return runner.finish_batch(results)


async def cut_when(
    runner: ToolRunner, item: ToolCall, reached: anyio.Event
) -> ToolResult:
    """Run one call, cancel it from outside once `reached` is set; return its answer.

    The cancel comes from the caller's scope (Ctrl-C, a sibling's failure), not
    from the call itself: what the runner answers then is what the tests check.
    Exactly one result must come back, whatever was cut.
    """
    results: list[ToolResult] = []

    async def one() -> None:
        results.append(await runner(item))

    async with anyio.create_task_group() as tg:
        tg.start_soon(one)
        await reached.wait()
        tg.cancel_scope.cancel()
    (result,) = results
    return result


@contextlib.contextmanager
def patient_autojump(real_seconds: float = 0.25) -> Iterator[None]:
    """On trio's MockClock, wait this long (real time) idle before jumping to a deadline.

    A tool on a real worker thread must get the chance to start before its
    virtual deadline is jumped to; on asyncio (real time) this does nothing.
    """
    try:
        import trio.lowlevel
        import trio.testing

        clock = trio.lowlevel.current_clock()
    except RuntimeError:  # not running under trio
        yield
        return
    assert isinstance(clock, trio.testing.MockClock)
    before = clock.autojump_threshold
    clock.autojump_threshold = real_seconds
    try:
        yield
    finally:
        clock.autojump_threshold = before


# -- a tool that needs the user's approval, and runners that ask for it ---------------


class Approvals:
    """The `guarded` tool (always asked about) and what of it ran, per test."""

    def __init__(self) -> None:
        self.ran: list[int] = []

        @tool(name="guarded")
        async def guarded(n: int) -> str:
            """Needs approval."""
            self.ran.append(n)
            return "ran"

        self.tool = guarded

    def runner(
        self,
        tmp_path: Path,
        ask: AskHandler,
        *,
        events: Events | None = None,
        halt: InterruptToken | None = None,
        deadline: RunDeadline | None = None,
    ) -> ToolRunner:
        """A runner over `guarded` whose every call asks `ask` first."""
        return ToolRunner(
            registry_with(self.tool),
            state=make_state(tmp_path),
            permissions=PermissionRules(ask=["guarded"]),
            ask=ask,
            on_event=events,
            interrupt=halt,
            deadline=deadline,
        )


async def never_answers(call: ToolCall, reason: str) -> AskAnswer:
    """An ask handler whose user never answers."""
    await anyio.sleep_forever()
    raise AssertionError("unreachable")
