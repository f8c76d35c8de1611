"""Test helpers: tools whose start and finish the test controls by rendezvous."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import anyio

import toolweave as tw


class Probe:
    """Records starts and ends, counts calls inside, and holds each call on a gate."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.inside = 0
        self.peak = 0
        self.gates: dict[str, anyio.Event] = {}
        self.entered: dict[str, anyio.Event] = {}

    def gate(self, key: str) -> anyio.Event:
        return self.gates.setdefault(key, anyio.Event())

    def entered_event(self, key: str) -> anyio.Event:
        return self.entered.setdefault(key, anyio.Event())

    def release(self, *keys: str) -> None:
        for key in keys:
            self.gate(key).set()

    def release_all(self) -> None:
        for event in self.gates.values():
            event.set()

    def started(self) -> list[str]:
        return [e.split(" ", 1)[1] for e in self.log if e.startswith("start ")]

    def tool(
        self,
        name: str,
        *,
        concurrency: Any = tw.Concurrency.SAFE,
        access: Callable[[dict[str, Any]], tw.Access] | None = None,
        interrupt: tw.Interrupt = tw.Interrupt.BLOCK,
        hold: bool = True,
        fail: bool = False,
        abort_siblings_on_error: bool = False,
    ) -> tw.Tool:
        probe = self

        async def body(key: str) -> str:
            """The body test tool."""
            probe.inside += 1
            probe.peak = max(probe.peak, probe.inside)
            probe.log.append(f"start {key}")
            probe.entered_event(key).set()
            try:
                if hold:
                    await probe.gate(key).wait()
                if fail:
                    raise RuntimeError(f"{key} failed")
            finally:
                probe.inside -= 1
                probe.log.append(f"end {key}")
            return f"{name}:{key}"

        return tw.tool(
            name=name,
            concurrency=concurrency,
            access=access,
            interrupt=interrupt,
            abort_siblings_on_error=abort_siblings_on_error,
        )(body)


def runner_for(registry: tw.ToolRegistry) -> Callable[[tw.ToolCall], Any]:
    """A minimal runner: look up, validate, call; failures become error results."""

    async def run(call: tw.ToolCall) -> tw.ToolResult:
        tool = registry.get(call.name)
        if tool is None:
            return tw.ToolResult(call.id, f"unknown tool {call.name}", is_error=True)
        try:
            args = tool.parse(call.input)
            out = await tool.call(args, tw.ToolContext(call))
        except Exception as exc:
            return tw.ToolResult(call.id, f"error: {exc}", is_error=True)
        return tw.ToolResult(call.id, str(out))

    return run


def calls(*specs: tuple[str, str]) -> list[tw.ToolCall]:
    """Calls named (tool, key), with ids c0, c1, ..."""
    return [
        tw.ToolCall(f"c{i}", name, {"key": key}) for i, (name, key) in enumerate(specs)
    ]


def check_sequence_matches(log: list[str], template: list[str | set[str]]) -> None:
    """Assert `log` matches `template`, where a set matches its items in any order."""
    i = 0
    for part in template:
        if isinstance(part, str):
            assert log[i] == part, (log, template)
            i += 1
        else:
            chunk = set(log[i : i + len(part)])
            assert chunk == part, (log, template)
            i += len(part)
    assert i == len(log), (log, template)


def dispatch_soon(
    tg: Any, dispatcher: tw.Dispatcher, *args: Any, **kwargs: Any
) -> list[tw.ToolResult]:
    """Start ``dispatcher.dispatch(*args, **kwargs)`` in `tg`.

    Returns the list that receives the results when the dispatch returns (empty
    until then), so a test can drive the batch by rendezvous meanwhile.
    """
    out: list[tw.ToolResult] = []

    async def go() -> None:
        out.extend(await dispatcher.dispatch(*args, **kwargs))

    tg.start_soon(go)
    return out


@contextlib.contextmanager
def patient_autojump(real_seconds: float = 0.25) -> Iterator[None]:
    """On trio's MockClock, idle this long (real time) before jumping to a deadline.

    Lets a tool on a real worker thread start before its virtual deadline is
    jumped to; on asyncio (real time) it does nothing.
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
