"""Property tests: random programs on a simulated key-value store.

Every schedule must be serial-equivalent: each read sees what serial execution
would show, and the final store equals the serial one — under random
latencies, failures, timeouts, caps and policies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolweave as tw
from toolweave.execution import ToolOutput
from toolweave.scheduling import ConcurrencyConfig, Dispatcher, InterruptToken

pytestmark = pytest.mark.anyio

KEYS = ["a/x", "a/y", "b/x", "b/y"]


@dataclass
class World:
    store: dict[str, str]
    virtual: bool

    async def pause(self, delay: int) -> None:
        # Virtual time on trio; on asyncio, interleave by checkpoints only.
        if self.virtual:
            await anyio.sleep(delay)
        else:
            for _ in range(delay):
                await anyio.lowlevel.checkpoint()


def _tools(world: World) -> tw.ToolRegistry:
    def key_access(*fields: str, write: bool = False) -> Any:
        def access(args: dict[str, Any]) -> tw.Access:
            keys = [f"kv:{args[f]}" for f in fields]
            return tw.Access(writes=keys) if write else tw.Access(reads=keys)

        return access

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=key_access("key"))
    async def get(key: str, delay: int, fail: bool) -> str:
        """The get test tool."""
        first = world.store.get(key, "")
        await world.pause(delay)
        if fail:
            raise RuntimeError("read failed")
        return first if world.store.get(key, "") == first else "TORN READ"

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=key_access("prefix"))
    async def scan(prefix: str, delay: int, fail: bool) -> str:
        """The scan test tool."""
        before = sorted((k, v) for k, v in world.store.items() if k.startswith(prefix))
        await world.pause(delay)
        after = sorted((k, v) for k, v in world.store.items() if k.startswith(prefix))
        return repr(before) if before == after else "TORN SCAN"

    @tw.tool(access=key_access("key", write=True))
    async def append(key: str, value: str, delay: int, fail: bool) -> str:
        """The append test tool."""
        old = world.store.get(key, "")
        await world.pause(delay)
        if fail:
            raise RuntimeError("write failed")
        world.store[key] = old + value
        return "ok"

    @tw.tool
    async def reset(delay: int, fail: bool) -> str:  # undeclared: a barrier
        """The reset test tool."""
        await world.pause(delay)
        world.store.clear()
        return "cleared"

    return tw.ToolRegistry([get, scan, append, reset])


ops = st.one_of(
    st.tuples(st.just("get"), st.fixed_dictionaries({"key": st.sampled_from(KEYS)})),
    st.tuples(
        st.just("scan"),
        st.fixed_dictionaries({"prefix": st.sampled_from(["a", "b", "a/x"])}),
    ),
    st.tuples(
        st.just("append"),
        st.fixed_dictionaries(
            {"key": st.sampled_from(KEYS), "value": st.sampled_from("pqr")}
        ),
    ),
    st.tuples(st.just("reset"), st.just({})),
    st.tuples(st.just("ghost"), st.just({})),
)
programs = st.lists(
    st.tuples(ops, st.integers(0, 5), st.booleans() | st.just(False), st.booleans()),
    min_size=1,
    max_size=10,
)


def _calls(program: list[Any]) -> list[tw.ToolCall]:
    out = []
    for i, ((name, args), delay, fail, _) in enumerate(program):
        out.append(tw.ToolCall(f"t{i}", name, {**args, "delay": delay, "fail": fail}))
    return out


def _runner(registry: tw.ToolRegistry, timeouts: dict[str, int]) -> Any:
    async def run(call: tw.ToolCall) -> tw.ToolResult:
        tool = registry.get(call.name)
        if tool is None:
            return tw.ToolResult(call.id, "unknown tool", is_error=True)
        limit = timeouts.get(call.id)
        try:
            with anyio.fail_after(limit) if limit is not None else _nullcontext():
                out = await tool.call(tool.parse(call.input), tw.ToolContext(call))
        except TimeoutError:
            return tw.ToolResult(call.id, "timed out", is_error=True)
        except Exception as exc:
            return tw.ToolResult(call.id, f"error: {exc}", is_error=True)
        return tw.ToolResult(call.id, str(out))

    return run


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


async def _execute(
    program: list[Any], config: ConcurrencyConfig, virtual: bool
) -> tuple[list[tw.ToolResult], dict[str, str]]:
    world = World({"a/x": "1", "b/y": "2"}, virtual)
    registry = _tools(world)
    timeouts = {f"t{i}": 3 for i, p in enumerate(program) if p[3] and virtual}
    results = await Dispatcher(config).dispatch(
        _calls(program), registry, _runner(registry, timeouts)
    )
    return results, world.store


@given(
    program=programs,
    policy=st.sampled_from(["all_or_nothing", "partition", "rwlock", "conflict"]),
    cap=st.integers(1, 4),
    per_batch=st.none() | st.integers(1, 4),
)
async def test_every_policy_is_serial_equivalent(
    anyio_backend: Any, program: list[Any], policy: str, cap: int, per_batch: int | None
) -> None:
    virtual = anyio_backend != "asyncio"
    per_batch = None if per_batch is None else min(per_batch, cap)
    config = ConcurrencyConfig(
        max_concurrency=cap, per_batch_max=per_batch, policy=policy
    )  # type: ignore[arg-type]
    serial, serial_store = await _execute(
        program, ConcurrencyConfig(enabled=False), virtual
    )
    parallel, store = await _execute(program, config, virtual)
    assert parallel == serial
    assert store == serial_store
    assert not any("TORN" in r.text for r in parallel)


@given(
    program=programs,
    policy=st.sampled_from(["partition", "rwlock", "conflict"]),
    interrupt_at=st.integers(0, 6),
)
async def test_interrupts_leave_a_complete_ordered_transcript(
    anyio_backend: Any, program: list[Any], policy: str, interrupt_at: int
) -> None:
    world = World({"a/x": "1"}, anyio_backend != "asyncio")
    registry = _tools(world)
    token = InterruptToken()
    dispatcher = Dispatcher(ConcurrencyConfig(max_concurrency=3, policy=policy))  # type: ignore[arg-type]
    calls = _calls(program)
    results: list[tw.ToolResult] = []
    async with anyio.create_task_group() as tg:

        async def go() -> None:
            results.extend(
                await dispatcher.dispatch(
                    calls, registry, _runner(registry, {}), interrupt=token
                )
            )

        tg.start_soon(go)
        await world.pause(interrupt_at)
        token.set()
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert all(r.is_error for r in results if r.synthetic)
    assert not any("TORN" in r.text for r in results)
    stats = dispatcher.statistics()
    assert (stats.running, stats.waiting, stats.slots_in_use) == (0, 0, 0)


# -- issue 13: ids, timeouts, modifiers, no-code calls, sessions sharing a host ------

IDS = ["call_0", "t1", "x"]  # a tiny pool: ids repeat within and across batches


@dataclass
class Host:
    """What every session on one Dispatcher shares: the running count and its peak."""

    inside: int = 0
    peak: int = 0


def _rich_tools(world: World, host: Host) -> tw.ToolRegistry:
    """Key-value tools plus a context switch, a hanging BLOCK tool and a sync reader."""

    def key_access(*fields: str, write: bool = False) -> Any:
        def access(args: dict[str, Any]) -> tw.Access:
            keys = [f"kv:{args[f]}" for f in fields]
            return tw.Access(writes=keys) if write else tw.Access(reads=keys)

        return access

    def enter() -> None:
        host.inside += 1
        host.peak = max(host.peak, host.inside)

    def reads_key_and_mode(args: dict[str, Any]) -> tw.Access:
        return tw.Access(reads=[f"kv:{args['key']}", "kv:mode"])

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=reads_key_and_mode)
    async def get(key: str, delay: int) -> str:  # also reports the mode it saw
        """The get test tool."""
        enter()
        try:
            first = world.store.get(key, "")
            await world.pause(delay)
            torn = world.store.get(key, "") != first
            return "TORN READ" if torn else f"{first}@{world.store.get('mode', '')}"
        finally:
            host.inside -= 1

    @tw.tool(access=key_access("key", write=True))
    async def append(key: str, value: str, delay: int) -> str:
        """The append test tool."""
        enter()
        try:
            old = world.store.get(key, "")
            await world.pause(delay)
            world.store[key] = old + value
            return "ok"
        finally:
            host.inside -= 1

    @tw.tool(access=lambda a: tw.Access(writes=["kv:mode"]))
    async def setmode(value: str, delay: int) -> ToolOutput:
        # changes context through a modifier, which later readers of mode must see
        """The setmode test tool."""
        enter()
        try:
            await world.pause(delay)
            return ToolOutput(
                "mode set", context_modifier=lambda: world.store.update(mode=value)
            )
        finally:
            host.inside -= 1

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=lambda a: tw.Access())
    async def hang(delay: int) -> str:  # BLOCK (the default), past any ceiling
        """The hang test tool."""
        enter()
        try:
            if not world.virtual:  # real time: a hang would cost real seconds
                await world.pause(delay)
                return "hung"
            await anyio.sleep_forever()
            raise AssertionError("unreachable")
        finally:
            host.inside -= 1

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=key_access("key"))
    def sync_get(key: str, delay: int) -> str:  # a worker thread
        """The sync_get test tool."""
        return world.store.get(key, "")

    return tw.ToolRegistry([get, append, setmode, hang, sync_get])


rich_ops = st.one_of(
    st.tuples(st.just("get"), st.fixed_dictionaries({"key": st.sampled_from(KEYS)})),
    st.tuples(
        st.just("sync_get"), st.fixed_dictionaries({"key": st.sampled_from(KEYS)})
    ),
    st.tuples(
        st.just("append"),
        st.fixed_dictionaries(
            {"key": st.sampled_from(KEYS), "value": st.sampled_from("pq")}
        ),
    ),
    st.tuples(
        st.just("setmode"), st.fixed_dictionaries({"value": st.sampled_from("MN")})
    ),
    st.tuples(st.just("hang"), st.just({})),
    st.tuples(st.just("ghost"), st.just({})),  # unknown tool: runs nothing
    st.tuples(st.just("get"), st.just({"key": 7})),  # fails its schema
)
rich_programs = st.lists(
    st.tuples(rich_ops, st.integers(0, 3), st.sampled_from(IDS)),
    min_size=1,
    max_size=6,
)


def _rich_calls(program: list[Any]) -> list[tw.ToolCall]:
    return [
        tw.ToolCall(call_id, name, {**args, "delay": delay})
        for (name, args), delay, call_id in program
    ]


def _rich_runner(registry: tw.ToolRegistry) -> Any:
    async def run(call: tw.ToolCall) -> tw.ToolResult:
        tool = registry.get(call.name)
        if tool is None:
            return tw.ToolResult(call.id, "unknown tool", is_error=True)
        try:
            args = tool.parse(call.input)
        except Exception:
            return tw.ToolResult(call.id, "invalid input", is_error=True)
        out = await tool.call(args, tw.ToolContext(call))
        if isinstance(out, ToolOutput):
            return tw.ToolResult(
                call.id, str(out.content), context_modifier=out.context_modifier
            )
        return tw.ToolResult(call.id, str(out))

    return run


def _ceiling(virtual: bool) -> float:
    # The ceiling is exercised on trio's virtual clock; on asyncio it is real time,
    # so it only has to be far above any call's real duration.
    return 50.0 if virtual else 30.0


async def _session(
    program: list[Any], dispatcher: Dispatcher, virtual: bool, host: Host
) -> tuple[list[tw.ToolCall], list[tw.ToolResult], dict[str, str]]:
    world = World({"a/x": "1", "b/y": "2"}, virtual)
    registry = _rich_tools(world, host)
    calls = _rich_calls(program)
    results = await dispatcher.dispatch(calls, registry, _rich_runner(registry))
    return calls, results, world.store


def _check_session(
    calls: list[tw.ToolCall],
    results: list[tw.ToolResult],
    serial: list[tw.ToolResult],
    store: dict[str, str],
    serial_store: dict[str, str],
) -> None:
    assert [r.call_id for r in results] == [c.id for c in calls]  # by position
    assert [(r.text, r.is_error, r.synthetic) for r in results] == [
        (r.text, r.is_error, r.synthetic) for r in serial
    ]
    assert store == serial_store
    assert not any("TORN" in r.text for r in results)
    for call, result in zip(calls, results, strict=True):
        if call.name == "ghost" or call.input.get("key") == 7:
            assert result.is_error and not result.synthetic  # answered, ran nothing
        if call.name == "hang" and result.text != "hung":
            assert result.synthetic and "did not finish within" in result.text


@given(
    sessions=st.lists(rich_programs, min_size=1, max_size=4),
    policy=st.sampled_from(["all_or_nothing", "partition", "rwlock", "conflict"]),
    cap=st.integers(1, 3),
    per_batch=st.none() | st.integers(1, 3),
)
async def test_sessions_sharing_a_dispatcher_stay_serial_equivalent_and_capped(
    anyio_backend: Any,
    sessions: list[list[Any]],
    policy: str,
    cap: int,
    per_batch: int | None,
) -> None:
    virtual = anyio_backend != "asyncio"
    ceiling = _ceiling(virtual)
    per_batch = None if per_batch is None else min(per_batch, cap)
    serial_runs = []
    for program in sessions:  # each session alone, one call at a time
        plain = Dispatcher(
            ConcurrencyConfig(enabled=False, default_tool_timeout=ceiling)
        )
        serial_runs.append(await _session(program, plain, virtual, Host()))
    host = Host()
    dispatcher = Dispatcher(
        ConcurrencyConfig(
            max_concurrency=cap,
            per_batch_max=per_batch,
            policy=policy,  # type: ignore[arg-type]
            default_tool_timeout=ceiling,
        )
    )
    outcomes: list[Any] = [None] * len(sessions)
    async with anyio.create_task_group() as tg:
        for index, program in enumerate(sessions):

            async def one(index: int = index, program: list[Any] = program) -> None:
                outcomes[index] = await _session(program, dispatcher, virtual, host)

            tg.start_soon(one)
    for (calls, results, store), (_, serial, serial_store) in zip(
        outcomes, serial_runs, strict=True
    ):
        _check_session(calls, results, serial, store, serial_store)
    assert host.peak <= cap  # the host cap held across every session and width
    stats = dispatcher.statistics()
    assert (stats.running, stats.waiting, stats.slots_in_use, stats.batches) == (
        0,
        0,
        0,
        0,
    )
    assert stats.abandoned_threads == 0  # the sync reader never hangs: none left
