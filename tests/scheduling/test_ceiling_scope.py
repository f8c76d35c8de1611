"""The ceiling and the owner's cancel share one scope per call (`at_ceiling`): who cut first wins.

With an interrupt token the engine cancels a call for its owner (selective
cancel in a batch, the user's interrupt on a single call) through the same
scope whose deadline is the per-call ceiling (issue 13, item 3). The answer
must still say which one stopped the call, even when the other fires while the
tool is still unwinding.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from sched_probe import runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken

pytestmark = pytest.mark.anyio

TIMED_OUT = "did not finish within"
INTERRUPTED = "Cancelled: interrupted by the user"


def _ceiling(anyio_backend: Any) -> float:
    return 30.0 if anyio_backend != "asyncio" else 0.3


@tw.tool(concurrency=tw.Concurrency.SAFE)
async def quick(key: str) -> str:
    """The quick test tool."""
    return key


def _calls(path: str, name: str) -> list[tw.ToolCall]:
    batch = [tw.ToolCall("x", name, {})]
    if path == "batch":
        batch.append(tw.ToolCall("q", "quick", {"key": "q"}))
    return batch


async def _dispatch_interrupting(
    reg: tw.ToolRegistry,
    batch: list[tw.ToolCall],
    config: ConcurrencyConfig,
    token: InterruptToken,
    interrupt_when: anyio.Event,
    after: anyio.Event | None = None,
) -> list[tw.ToolResult]:
    out: list[tw.ToolResult] = []

    async def run() -> None:
        out.extend(
            await Dispatcher(config).dispatch(
                batch, reg, runner_for(reg), interrupt=token
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await interrupt_when.wait()
        token.set()
        if after is not None:
            after.set()
    return out


@pytest.mark.parametrize("path", ["batch", "single"])
async def test_with_a_token_a_call_that_never_returns_is_answered_at_the_ceiling(
    anyio_backend: Any, path: str
) -> None:
    ceiling = _ceiling(anyio_backend)

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    async def hang() -> str:
        """The hang test tool."""
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    reg = tw.ToolRegistry([hang, quick])
    config = ConcurrencyConfig(default_tool_timeout=ceiling)
    out = await Dispatcher(config).dispatch(
        _calls(path, "hang"), reg, runner_for(reg), interrupt=InterruptToken()
    )
    assert out[0].is_error and out[0].synthetic
    assert f"{TIMED_OUT} {ceiling:g} s" in out[0].text
    assert [r.text for r in out[1:]] == (["q"] if path == "batch" else [])


@pytest.mark.parametrize("path", ["batch", "single"])
@pytest.mark.parametrize("with_ceiling", [True, False])
async def test_an_interrupt_before_the_ceiling_is_an_interrupt_even_if_unwinding_outlasts_it(
    anyio_backend: Any, path: str, with_ceiling: bool
) -> None:
    ceiling = _ceiling(anyio_backend)
    started = anyio.Event()

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    async def slow_to_stop() -> str:
        """The slow_to_stop test tool."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(ceiling * 2)  # still unwinding past the ceiling
        raise AssertionError("unreachable")

    reg = tw.ToolRegistry([slow_to_stop, quick])
    config = ConcurrencyConfig(default_tool_timeout=ceiling if with_ceiling else None)
    out = await _dispatch_interrupting(
        reg, _calls(path, "slow_to_stop"), config, InterruptToken(), started
    )
    assert out[0].is_error and out[0].synthetic
    assert out[0].text.startswith(INTERRUPTED), out[0].text
    assert TIMED_OUT not in out[0].text


@pytest.mark.parametrize("path", ["batch", "single"])
async def test_an_interrupt_after_the_ceiling_fired_leaves_the_timeout(
    anyio_backend: Any, path: str
) -> None:
    ceiling = _ceiling(anyio_backend)
    cut_off = anyio.Event()
    go_on = anyio.Event()

    @tw.tool(concurrency=tw.Concurrency.SAFE, interrupt=tw.Interrupt.CANCEL)
    async def stubborn() -> str:
        """The stubborn test tool."""
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cut_off.set()  # the ceiling fired; the interrupt comes while we unwind
            with anyio.CancelScope(shield=True):
                await go_on.wait()
            raise
        raise AssertionError("unreachable")

    reg = tw.ToolRegistry([stubborn, quick])
    config = ConcurrencyConfig(default_tool_timeout=ceiling)
    out = await _dispatch_interrupting(
        reg, _calls(path, "stubborn"), config, InterruptToken(), cut_off, go_on
    )
    assert out[0].is_error and out[0].synthetic
    assert f"{TIMED_OUT} {ceiling:g} s" in out[0].text, out[0].text
