from __future__ import annotations

import itertools
import threading
from typing import Any

import anyio
import pytest
from sched_probe import Probe, calls, check_sequence_matches, dispatch_soon, runner_for

import toolweave as tw
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken

pytestmark = pytest.mark.anyio


def _setup(**tools_kw: Any) -> tuple[Probe, tw.ToolRegistry]:
    probe = Probe()
    reg = tw.ToolRegistry(
        [
            probe.tool("read"),
            probe.tool("write", concurrency=tw.Concurrency.SEQUENTIAL),
            probe.tool("cancel", interrupt=tw.Interrupt.CANCEL),
        ]
    )
    return probe, reg


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
async def test_results_in_call_order_whatever_the_completion_order(
    order: tuple[int, ...],
) -> None:
    probe, reg = _setup()
    batch = calls(("read", "a"), ("read", "b"), ("read", "c"))
    completed: list[str] = []
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            Dispatcher(),
            batch,
            reg,
            runner_for(reg),
            on_completed=lambda c, r: completed.append(c.id),
        )
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 3  # all three overlap
        for i in order:
            probe.release("abc"[i])
            await anyio.wait_all_tasks_blocked()
    assert [r.call_id for r in out] == ["c0", "c1", "c2"]
    assert [r.content for r in out] == ["read:a", "read:b", "read:c"]
    assert completed == [f"c{i}" for i in order]


async def test_on_started_fires_in_call_order_from_the_dispatching_task() -> None:
    probe, reg = _setup()
    probe.release_all()
    for key in "abcdef":
        probe.release(key)
    started: list[tuple[str, int]] = []
    me = anyio.get_current_task().id
    results = await Dispatcher().dispatch(
        calls(*[("read", k) for k in "abcdef"]),
        reg,
        runner_for(reg),
        on_started=lambda c: started.append((c.id, anyio.get_current_task().id)),
    )
    assert [s[0] for s in started] == [f"c{i}" for i in range(6)]
    assert {s[1] for s in started} == {me}
    assert all(not r.is_error for r in results)


async def test_runner_faults_become_error_results_and_the_batch_goes_on() -> None:
    probe, reg = _setup()
    for key in "abcd":
        probe.release(key)
    inner = runner_for(reg)

    async def runner(call: tw.ToolCall) -> tw.ToolResult:
        if call.id == "c0":
            raise RuntimeError("runner exploded")
        if call.id == "c1":
            return None  # type: ignore[return-value]
        if call.id == "c2":
            return tw.ToolResult("wrong-id", "x")
        return await inner(call)

    out = await Dispatcher().dispatch(
        calls(("read", "a"), ("read", "b"), ("read", "c"), ("read", "d")), reg, runner
    )
    assert [r.call_id for r in out] == ["c0", "c1", "c2", "c3"]
    assert out[0].is_error and "runner exploded" in out[0].text
    assert out[1].is_error and "returned no result" in out[1].text
    assert out[2].content == "x"
    assert out[3].content == "read:d" and not out[3].is_error


async def test_listener_faults_are_logged_and_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe, reg = _setup()
    for key in "ab":
        probe.release(key)

    def bad(*args: object) -> None:
        raise ValueError("listener bug")

    out = await Dispatcher().dispatch(
        calls(("read", "a"), ("read", "b")),
        reg,
        runner_for(reg),
        on_started=bad,
        on_completed=bad,
    )
    assert [r.content for r in out] == ["read:a", "read:b"]
    assert sum("listener" in r.message for r in caplog.records) == 4


async def test_the_host_cap_is_shared_by_every_dispatch() -> None:
    # seed 000 §4: two sessions of 3 calls, cap 2: never more than 2, and 2 is reached.
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2))
    results: dict[str, list[tw.ToolResult]] = {}

    async def session(name: str, keys: str) -> None:
        results[name] = await dispatcher.dispatch(
            calls(*[("read", k) for k in keys]), reg, runner_for(reg)
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(session, "s1", "abc")
        tg.start_soon(session, "s2", "def")
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 2
        assert dispatcher.statistics().running == 2
        for key in "abcdef":
            probe.release(key)
            await anyio.wait_all_tasks_blocked()
            assert probe.inside <= 2
    assert probe.peak == 2
    assert len(results["s1"]) == len(results["s2"]) == 3
    assert dispatcher.statistics().slots_in_use == 0


async def test_per_batch_cap_delays_on_started_but_never_reorders_it() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=10, per_batch_max=2))
    started: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: dispatcher.dispatch(
                calls(*[("read", k) for k in "abcde"]),
                reg,
                runner_for(reg),
                on_started=lambda c: started.append(c.id),
            )
        )
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 2 and started == ["c0", "c1"]
        probe.release("b")
        await anyio.wait_all_tasks_blocked()
        assert started == ["c0", "c1", "c2"] and probe.inside == 2
        probe.release_all()
        for key in "cde":
            probe.release(key)
    assert started == [f"c{i}" for i in range(5)]
    assert probe.peak == 2


async def test_slots_are_taken_in_call_order() -> None:
    # STYLE E1: the parent takes slots in call order; trio's scheduler would
    # reorder acquisition inside the children. Repeat to give it the chance.
    for _ in range(10):
        probe, reg = _setup()
        dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2))
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: dispatcher.dispatch(
                    calls(*[("read", k) for k in "abcdef"]), reg, runner_for(reg)
                )
            )
            for wave in ("ab", "cd", "ef"):
                await anyio.wait_all_tasks_blocked()
                assert set(probe.started()[-2:]) == set(wave)
                probe.release(*wave)
        assert probe.started()[:2] in (["a", "b"], ["b", "a"])


async def test_sync_tools_get_enough_worker_threads() -> None:
    barrier = threading.Barrier(8, timeout=30)

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    def wait_for_all(key: str) -> str:
        """The wait_for_all test tool."""
        barrier.wait()  # only passes if all 8 run on threads at once
        return key

    reg = tw.ToolRegistry([wait_for_all])
    # No ceiling: trio's MockClock would jump to it while the threads wait.
    config = ConcurrencyConfig(max_concurrency=8, default_tool_timeout=None)
    out = await Dispatcher(config).dispatch(
        calls(*[("wait_for_all", str(i)) for i in range(8)]), reg, runner_for(reg)
    )
    assert [r.content for r in out] == [str(i) for i in range(8)]


async def test_disabled_config_is_a_plain_loop_in_the_calling_task() -> None:
    seen_tasks: set[int] = set()

    @tw.tool(concurrency=tw.Concurrency.SAFE)
    async def where(key: str) -> str:
        """The where test tool."""
        seen_tasks.add(anyio.get_current_task().id)
        return key

    reg = tw.ToolRegistry([where])
    threads = threading.active_count()
    started: list[str] = []
    out = await Dispatcher(ConcurrencyConfig(enabled=False)).dispatch(
        calls(*[("where", k) for k in "abc"]),
        reg,
        runner_for(reg),
        on_started=lambda c: started.append(c.id),
    )
    assert seen_tasks == {anyio.get_current_task().id}  # no child tasks at all
    assert threading.active_count() == threads
    assert [r.content for r in out] == ["a", "b", "c"] and started == ["c0", "c1", "c2"]


async def test_sequential_tools_never_overlap_under_every_policy() -> None:
    for policy in ("all_or_nothing", "partition", "rwlock", "conflict"):
        probe, reg = _setup()
        batch = calls(("read", "a"), ("write", "w"), ("read", "b"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: Dispatcher(ConcurrencyConfig(policy=policy)).dispatch(  # type: ignore[arg-type]
                    batch, reg, runner_for(reg)
                )
            )
            for key in "awb":
                await anyio.wait_all_tasks_blocked()
                assert probe.inside == 1, policy
                probe.release(key)
        check_sequence_matches(
            probe.log, ["start a", "end a", "start w", "end w", "start b", "end b"]
        )


async def test_interrupt_cancels_cancel_tools_lets_block_tools_finish_and_skips_the_rest() -> (
    None
):
    probe, reg = _setup()
    token = InterruptToken()
    batch = calls(("cancel", "x"), ("read", "b"), ("write", "w"), ("read", "c"))
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg, Dispatcher(), batch, reg, runner_for(reg), interrupt=token
        )
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 2  # x and b run; w waits for them
        token.set()
        await anyio.wait_all_tasks_blocked()
        assert probe.inside == 1  # the BLOCK read runs on
        probe.release("b")
    assert [r.call_id for r in out] == ["c0", "c1", "c2", "c3"]
    assert out[0].synthetic and "Cancelled: interrupted" in out[0].text
    assert out[1].content == "read:b" and not out[1].is_error
    assert all(r.synthetic and r.is_error and "Not run" in r.text for r in out[2:])
    assert "start w" not in probe.log


async def test_interrupt_accepts_an_anyio_event_and_works_on_the_sequential_path() -> (
    None
):
    for enabled in (True, False):
        _probe, reg = _setup()
        event = anyio.Event()
        async with anyio.create_task_group() as tg:
            out = dispatch_soon(
                tg,
                Dispatcher(ConcurrencyConfig(enabled=enabled)),
                calls(("cancel", "x"), ("write", "w")),
                reg,
                runner_for(reg),
                interrupt=event,
            )
            await anyio.wait_all_tasks_blocked()
            event.set()
        assert out[0].synthetic and "Cancelled" in out[0].text
        assert out[1].synthetic and "Not run" in out[1].text


async def test_interrupt_set_before_dispatch_runs_nothing() -> None:
    probe, reg = _setup()
    token = InterruptToken()
    token.set()
    out = await Dispatcher().dispatch(
        calls(("read", "a"), ("read", "b")), reg, runner_for(reg), interrupt=token
    )
    assert all(r.synthetic for r in out) and probe.log == []


async def test_cancelling_the_dispatching_task_leaves_nothing_behind() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2))
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: dispatcher.dispatch(
                    calls(*[("read", k) for k in "abcd"]), reg, runner_for(reg)
                )
            )
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
    assert probe.inside == 0
    stats = dispatcher.statistics()
    assert stats.slots_in_use == 0 and stats.batches == 0


async def test_readiness_is_awaited_outside_the_slot() -> None:
    probe = Probe()
    warm = anyio.Event()

    class Cold(tw.tools.FunctionTool):
        connected = False

        @property
        def needs_prepare(self) -> bool:
            return not self.connected

        async def prepare(self) -> None:
            await warm.wait()
            self.connected = True

    async def cold_body(key: str) -> str:
        return f"cold:{key}"

    cold = Cold(cold_body, name="cold", description="", concurrency=tw.Concurrency.SAFE)
    reg = tw.ToolRegistry([cold, probe.tool("read")])
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=1))
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: dispatcher.dispatch(
                calls(("cold", "x"), ("cold", "y")), reg, runner_for(reg)
            )
        )
        tg.start_soon(
            lambda: dispatcher.dispatch(
                calls(("read", "a"), ("read", "b")), reg, runner_for(reg)
            )
        )
        await anyio.wait_all_tasks_blocked()
        # the cold batch holds no slot while it connects: the other batch runs.
        assert probe.started() == ["a"]
        assert dispatcher.statistics().slots_in_use == 1
        probe.release("a", "b")
        await anyio.wait_all_tasks_blocked()
        warm.set()
    assert cold.connected


async def test_sibling_abort_cancels_only_siblings_that_declare_it() -> None:
    probe = Probe()
    shell = probe.tool("shell", abort_siblings_on_error=True)
    failing = probe.tool("failing", fail=True, hold=False, abort_siblings_on_error=True)
    reg = tw.ToolRegistry([shell, failing, probe.tool("read")])
    batch = calls(("shell", "s1"), ("read", "r"), ("failing", "f"), ("shell", "s2"))
    dispatcher = Dispatcher(ConcurrencyConfig(per_batch_max=3))
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(tg, dispatcher, batch, reg, runner_for(reg))
        await anyio.wait_all_tasks_blocked()
        probe.release("r")
    assert "sibling failing failed" in out[0].text and out[0].synthetic
    assert out[1].content == "read:r"
    assert out[2].is_error and not out[2].synthetic
    assert out[3].synthetic and "Not run: sibling failing failed" in out[3].text


async def test_benign_failure_without_the_declaration_aborts_nothing() -> None:
    probe = Probe()
    reg = tw.ToolRegistry(
        [probe.tool("grep", fail=True, hold=False), probe.tool("read")]
    )
    probe.release("a")
    out = await Dispatcher().dispatch(
        calls(("grep", "g"), ("read", "a")), reg, runner_for(reg)
    )
    assert out[0].is_error and out[1].content == "read:a"


def _modifier_runner(reg: tw.ToolRegistry, applied: list[str]) -> Any:
    inner = runner_for(reg)

    async def run(call: tw.ToolCall) -> tw.ToolResult:
        result = await inner(call)
        return tw.ToolResult(
            result.call_id,
            result.content,
            context_modifier=lambda: applied.append(call.id),
        )

    return run


async def test_context_modifiers_apply_as_each_call_finishes() -> None:
    # issue 13 item 4: not at the end of the batch; overlapping calls declared
    # no conflict, so their modifiers apply in completion order.
    probe, reg = _setup()
    applied: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: Dispatcher().dispatch(
                calls(("read", "a"), ("read", "b")), reg, _modifier_runner(reg, applied)
            )
        )
        await anyio.wait_all_tasks_blocked()
        probe.release("b")
        await anyio.wait_all_tasks_blocked()
        assert applied == ["c1"]  # while c0 still runs
        probe.release("a")
    assert applied == ["c1", "c0"]


async def test_context_modifiers_apply_right_after_each_call_when_sequential() -> None:
    probe, reg = _setup()
    applied: list[str] = []
    seen_by_second: list[list[str]] = []
    inner = _modifier_runner(reg, applied)

    async def run(call: tw.ToolCall) -> tw.ToolResult:
        seen_by_second.append(list(applied))
        return await inner(call)

    probe.release("a", "b")
    await Dispatcher(ConcurrencyConfig(enabled=False)).dispatch(
        calls(("read", "a"), ("read", "b")), reg, run
    )
    assert seen_by_second == [[], ["c0"]] and applied == ["c0", "c1"]


async def test_statistics_track_running_and_waiting() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=2))
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: dispatcher.dispatch(
                calls(*[("read", k) for k in "abcd"]), reg, runner_for(reg)
            )
        )
        await anyio.wait_all_tasks_blocked()
        stats = dispatcher.statistics()
        assert (stats.running, stats.waiting, stats.batches) == (2, 2, 1)
        probe.release_all()
        for k in "abcd":
            probe.release(k)
    stats = dispatcher.statistics()
    assert (stats.running, stats.waiting, stats.batches, stats.slots_in_use) == (
        0,
        0,
        0,
        0,
    )


async def test_aclose_drains_running_calls() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher()
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg, dispatcher, calls(("read", "a"), ("read", "b")), reg, runner_for(reg)
        )
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(dispatcher.aclose)
        await anyio.wait_all_tasks_blocked()
        assert dispatcher.closed and out == []
        probe.release("a", "b")
    assert [r.content for r in out] == ["read:a", "read:b"]


async def test_aclose_race_runs_what_is_left_on_the_caller() -> None:
    probe, reg = _setup()
    dispatcher = Dispatcher(ConcurrencyConfig(per_batch_max=1))
    out: list[tw.ToolResult] = []
    me: list[int] = []
    async with anyio.create_task_group() as tg:

        async def go() -> None:
            me.append(anyio.get_current_task().id)
            out.extend(
                await dispatcher.dispatch(
                    calls(*[("read", k) for k in "abc"]), reg, runner_for(reg)
                )
            )

        tg.start_soon(go)
        await anyio.wait_all_tasks_blocked()
        assert probe.started() == ["a"]
        tg.start_soon(dispatcher.aclose)
        await anyio.wait_all_tasks_blocked()
        probe.release("a", "b", "c")
    assert [r.content for r in out] == ["read:a", "read:b", "read:c"]
    assert dispatcher.statistics().slots_in_use == 0
    # a later dispatch still works, sequentially
    probe.release("d", "e")
    later = await dispatcher.dispatch(
        calls(("read", "d"), ("read", "e")), reg, runner_for(reg)
    )
    assert [r.content for r in later] == ["read:d", "read:e"]


async def test_aclose_cancels_after_the_drain_timeout(anyio_backend: Any) -> None:
    _probe, reg = _setup()
    drain = 0.2 if anyio_backend == "asyncio" else 5.0
    dispatcher = Dispatcher(ConcurrencyConfig(per_batch_max=1, drain_timeout=drain))
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg, dispatcher, calls(("read", "a"), ("read", "b")), reg, runner_for(reg)
        )
        await anyio.wait_all_tasks_blocked()
        start = anyio.current_time()
        await dispatcher.aclose()
        if anyio_backend != "asyncio":
            assert anyio.current_time() - start == pytest.approx(drain)
    assert out[0].synthetic and "dispatcher was closed" in out[0].text
    assert out[1].synthetic and "Not run" in out[1].text
    assert dispatcher.statistics().slots_in_use == 0


async def test_a_skipped_call_does_not_let_later_calls_overtake_its_dependencies() -> (
    None
):
    # Regression (found by the property test): a call skipped while waiting must
    # count as done only once what it waited for is done.
    probe = Probe()
    key = lambda a: tw.Access(writes=["k:1"])  # noqa: E731
    reg = tw.ToolRegistry(
        [
            probe.tool(
                "boom",
                fail=True,
                abort_siblings_on_error=True,
                access=lambda a: tw.Access(),
            ),
            probe.tool("slow", concurrency=tw.Concurrency.SEQUENTIAL, access=key),
            probe.tool(
                "aborted",
                concurrency=tw.Concurrency.SEQUENTIAL,
                access=key,
                abort_siblings_on_error=True,
            ),
            probe.tool("after", access=lambda a: tw.Access(reads=["k:1"])),
        ]
    )
    async with anyio.create_task_group() as tg:
        out = dispatch_soon(
            tg,
            Dispatcher(),
            calls(("slow", "s"), ("aborted", "x"), ("after", "r"), ("boom", "b")),
            reg,
            runner_for(reg),
        )
        await anyio.wait_all_tasks_blocked()
        assert sorted(probe.started()) == ["b", "s"]
        probe.release("b")  # boom fails -> 'aborted' is skipped while 'slow' still runs
        await anyio.wait_all_tasks_blocked()
        assert sorted(probe.started()) == ["b", "s"]  # "after" still waits for "slow"
        probe.release("s")
        await anyio.wait_all_tasks_blocked()
        probe.release("r")
    assert out[1].synthetic and out[2].content == "after:r"
    check_sequence_matches(
        probe.log, [{"start s", "start b"}, "end b", "end s", "start r", "end r"]
    )
