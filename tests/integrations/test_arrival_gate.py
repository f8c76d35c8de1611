"""ArrivalGate: the conflict policy over arrival order (no framework needed)."""

from __future__ import annotations

import anyio
import pytest

from toolweave import Access
from toolweave.integrations._arrival import ArrivalGate


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The gate is plain anyio: both backends."""
    return str(request.param)


@pytest.mark.anyio
async def test_arrival_gate_waits_only_for_earlier_conflicting_calls() -> None:
    gate = ArrivalGate()
    log: list[str] = []
    release = {name: anyio.Event() for name in ("r1", "w", "r2", "other")}
    claims = {
        "r1": Access(reads=("db",)),
        "w": Access(writes=("db",)),
        "r2": Access(reads=("db",)),
        "other": Access(writes=("elsewhere",)),
    }

    async def call(name: str) -> None:
        async with gate.hold(claims[name]):
            log.append(f"start {name}")
            await release[name].wait()
        log.append(f"end {name}")

    async with anyio.create_task_group() as tg:
        for name in ("r1", "w", "r2", "other"):
            tg.start_soon(call, name)
            await anyio.wait_all_tasks_blocked()  # arrival order = this order
        assert log == ["start r1", "start other"]  # w waits for r1, r2 waits for w
        assert gate.holding == 4
        release["r1"].set()
        await anyio.wait_all_tasks_blocked()
        assert log[-1] == "start w"
        release["w"].set()
        await anyio.wait_all_tasks_blocked()
        assert log[-1] == "start r2"
        release["r2"].set()
        release["other"].set()
    assert gate.holding == 0


@pytest.mark.anyio
async def test_a_cancelled_waiter_releases_the_calls_behind_it() -> None:
    gate = ArrivalGate()
    first_release = anyio.Event()
    entered: list[str] = []

    async def hold(name: str, access: Access, until: anyio.Event) -> None:
        async with gate.hold(access):
            entered.append(name)
            await until.wait()

    done = anyio.Event()
    done.set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold, "w1", Access.barrier(), first_release)
        await anyio.wait_all_tasks_blocked()
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as inner:
                inner.start_soon(hold, "w2", Access.barrier(), done)
                await anyio.wait_all_tasks_blocked()
                scope.cancel()
        tg.start_soon(hold, "w3", Access.barrier(), done)
        await anyio.wait_all_tasks_blocked()
        assert entered == ["w1"]
        first_release.set()
    assert entered == ["w1", "w3"]
