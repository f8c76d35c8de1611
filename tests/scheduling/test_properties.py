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
        first = world.store.get(key, "")
        await world.pause(delay)
        if fail:
            raise RuntimeError("read failed")
        return first if world.store.get(key, "") == first else "TORN READ"

    @tw.tool(concurrency=tw.Concurrency.SAFE, access=key_access("prefix"))
    async def scan(prefix: str, delay: int, fail: bool) -> str:
        before = sorted((k, v) for k, v in world.store.items() if k.startswith(prefix))
        await world.pause(delay)
        after = sorted((k, v) for k, v in world.store.items() if k.startswith(prefix))
        return repr(before) if before == after else "TORN SCAN"

    @tw.tool(access=key_access("key", write=True))
    async def append(key: str, value: str, delay: int, fail: bool) -> str:
        old = world.store.get(key, "")
        await world.pause(delay)
        if fail:
            raise RuntimeError("write failed")
        world.store[key] = old + value
        return "ok"

    @tw.tool
    async def reset(delay: int, fail: bool) -> str:  # undeclared: a barrier
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
