"""Edge paths of the scheduler: config errors, tokens, faults in readiness and modifiers,
sibling abort on the sequential path, forced closes. Rendezvous only, both backends."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from sched_probe import Probe, calls, dispatch_soon, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken, classify

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "options",
    [
        {"max_concurrency": 0},
        {"max_concurrency": 2, "per_batch_max": 3},
        {"policy": "fastest"},
        {"drain_timeout": -1},
    ],
)
def test_bad_config_is_a_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(tw.ConfigError):
        ConcurrencyConfig(**options)


async def test_interrupt_token_behaves_like_an_event() -> None:
    token = InterruptToken()
    seen: list[str] = []
    unsubscribe = token.subscribe(lambda: seen.append("first"))
    token.subscribe(lambda: seen.append("second"))
    unsubscribe()
    unsubscribe()  # idempotent
    assert not token.is_set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(token.wait)
        await anyio.wait_all_tasks_blocked()
        token.set()
        token.set()  # idempotent
    assert token.is_set() and seen == ["second"]
    await token.wait()  # already set: returns at once
    token.subscribe(lambda: seen.append("late"))  # runs at once
    assert seen == ["second", "late"]


async def test_a_modifier_that_raises_is_logged_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe, reg = Probe(), None
    reg = tw.ToolRegistry([probe.tool("read", hold=False)])
    inner = runner_for(reg)
    applied: list[str] = []

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        result = await inner(call)

        def modify() -> None:
            if call.id == "c0":
                raise RuntimeError("modifier bug")
            applied.append(call.id)

        return tw.ToolResult(result.call_id, result.content, context_modifier=modify)

    out = await Dispatcher().dispatch(calls(("read", "a"), ("read", "b")), reg, runner)
    assert [r.content for r in out] == ["read:a", "read:b"]
    assert applied == ["c1"]
    assert any("context modifier" in r.message for r in caplog.records)


def test_an_input_model_that_raises_fails_closed() -> None:
    class Broken(tw.tools.FunctionTool):
        def parse(self, raw: Any) -> dict[str, Any]:
            raise RuntimeError("validator bug")

    async def body(key: str) -> str:
        return key

    broken = Broken(
        body, name="broken", description="", concurrency=tw.Concurrency.SAFE
    )
    plan = classify(tw.ToolCall("1", "broken", {"key": "x"}), tw.ToolRegistry([broken]))
    assert not plan.parallel_ok and plan.access.is_barrier


class _Cold(tw.tools.FunctionTool):
    """A tool with a readiness step that may fail."""

    prepared = 0
    fail = False

    @property
    def needs_prepare(self) -> bool:
        return True

    async def prepare(self) -> None:
        type(self).prepared += 1
        if self.fail:
            raise OSError("server would not start")


@pytest.mark.parametrize("enabled", [True, False])
async def test_readiness_runs_on_both_paths_and_a_failure_is_the_calls_to_report(
    enabled: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async def body(key: str) -> str:
        return f"ran {key}"

    cold = _Cold(body, name="cold", description="", concurrency=tw.Concurrency.SAFE)
    cold.fail = True
    _Cold.prepared = 0
    reg = tw.ToolRegistry([cold])
    out = await Dispatcher(ConcurrencyConfig(enabled=enabled)).dispatch(
        calls(("cold", "a"), ("cold", "b")), reg, runner_for(reg)
    )
    assert [r.content for r in out] == ["ran a", "ran b"]
    assert _Cold.prepared == 2
    assert any("readiness step" in r.message for r in caplog.records)


async def test_sibling_abort_on_the_sequential_path() -> None:
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool("boom", fail=True, hold=False, abort_siblings_on_error=True),
            probe.tool("shell", hold=False, abort_siblings_on_error=True),
            probe.tool("read", hold=False),
        ]
    )
    out = await Dispatcher(ConcurrencyConfig(enabled=False)).dispatch(
        calls(("boom", "b"), ("shell", "s"), ("read", "r")), reg, runner_for(reg)
    )
    assert out[0].is_error and not out[0].synthetic
    assert out[1].synthetic and "sibling boom failed" in out[1].text
    assert out[2].content == "read:r"


async def test_a_call_aborted_while_its_batch_waits_is_never_admitted() -> None:
    # partition: the second shell call waits (in the admitting task) for the first;
    # the first fails, so the second is skipped without taking a slot.
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool(
                "boom",
                concurrency=tw.Concurrency.SEQUENTIAL,
                fail=True,
                abort_siblings_on_error=True,
            ),
            probe.tool(
                "shell",
                concurrency=tw.Concurrency.SEQUENTIAL,
                abort_siblings_on_error=True,
            ),
        ]
    )
    started: list[str] = []
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            Dispatcher(ConcurrencyConfig(policy="partition")),
            calls(("boom", "b"), ("shell", "s")),
            reg,
            runner_for(reg),
            on_started=lambda c: started.append(c.id),
        )
        await anyio.wait_all_tasks_blocked()
        probe.release("b")
    assert started == ["c0"]
    assert out[1].synthetic and "Not run: sibling boom failed" in out[1].text


async def test_a_call_submitted_after_a_sibling_failed_is_not_run() -> None:
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool("boom", fail=True, hold=False, abort_siblings_on_error=True),
            probe.tool("shell", hold=False, abort_siblings_on_error=True),
        ]
    )
    async with Dispatcher().open_stream(reg, runner_for(reg)) as stream:
        first, second = calls(("boom", "b"), ("shell", "s"))
        stream.submit(first)
        await anyio.wait_all_tasks_blocked()  # boom ran and failed
        stream.submit(second)
        assert stream.calls == [first, second]
        results = await stream.harvest()
    assert results[1].synthetic and "sibling boom failed" in results[1].text


async def test_small_things() -> None:
    async with Dispatcher() as dispatcher:
        assert (
            await dispatcher.dispatch(
                [], tw.ToolRegistry(), runner_for(tw.ToolRegistry())
            )
            == []
        )
    assert dispatcher.closed
    await dispatcher.aclose()  # idempotent, nothing running
    event = anyio.Event()
    event.set()
    probe = Probe()
    reg = tw.ToolRegistry([probe.tool("read")])
    out = await Dispatcher().dispatch(
        calls(("read", "a"), ("read", "b")), reg, runner_for(reg), interrupt=event
    )
    assert all(r.synthetic for r in out) and probe.log == []


async def test_a_forced_close_settles_running_and_waiting_calls(
    anyio_backend: Any,
) -> None:
    probe = Probe()
    key = lambda a: tw.Access(writes=["k:1"])  # noqa: E731
    reg = tw.ToolRegistry(
        [
            probe.tool("write", concurrency=tw.Concurrency.SEQUENTIAL, access=key),
            probe.tool("read", access=lambda a: tw.Access(reads=["k:1"])),
        ]
    )
    drain = 0.05 if anyio_backend == "asyncio" else 3.0
    dispatcher = Dispatcher(ConcurrencyConfig(drain_timeout=drain))
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg, dispatcher, calls(("write", "w"), ("read", "r")), reg, runner_for(reg)
        )
        await anyio.wait_all_tasks_blocked()
        await dispatcher.aclose()
    assert out[0].synthetic and "Cancelled: the dispatcher was closed" in out[0].text
    assert out[1].synthetic and "Not run: the dispatcher was closed" in out[1].text
    assert "start r" not in probe.log
    assert dispatcher.statistics().slots_in_use == 0


async def test_a_forced_close_cancels_the_call_run_on_the_caller(
    anyio_backend: Any,
) -> None:
    probe = Probe()
    reg = tw.ToolRegistry([probe.tool("read")])
    drain = 0.5 if anyio_backend == "asyncio" else 3.0
    dispatcher = Dispatcher(ConcurrencyConfig(per_batch_max=1, drain_timeout=drain))
    batch = calls(("read", "a"), ("read", "b"), ("read", "c"))
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(tg, dispatcher, batch, reg, runner_for(reg))
        await probe.entered_event("a").wait()
        tg.start_soon(dispatcher.aclose)
        while not dispatcher.closed:  # aclose marks the batch closed before it waits
            await anyio.lowlevel.checkpoint()
        probe.release("a")  # a finishes; b then runs on the caller and hangs
        await probe.entered_event("b").wait()
    assert out[0].content == "read:a"
    assert out[1].synthetic and "Cancelled" in out[1].text
    assert out[2].synthetic and "Not run" in out[2].text


async def test_closing_after_an_interrupt_keeps_the_interrupt_reason() -> None:
    probe = Probe()
    reg = tw.ToolRegistry(
        [probe.tool("read"), probe.tool("write", concurrency=tw.Concurrency.SEQUENTIAL)]
    )
    token = InterruptToken()
    dispatcher = Dispatcher()
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            dispatcher,
            calls(("read", "a"), ("write", "w")),
            reg,
            runner_for(reg),
            interrupt=token,
        )
        await anyio.wait_all_tasks_blocked()
        token.set()  # the BLOCK read runs on
        tg.start_soon(dispatcher.aclose)
        await anyio.wait_all_tasks_blocked()
        probe.release("a")
    assert out[0].content == "read:a"
    assert "interrupted" in out[1].text
