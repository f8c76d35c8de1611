"""The private anyio / CPython internals `toolweave._native` reads, as it reads them.

Each test is one row of the package docstring's list: the attribute exists, has
the type or the meaning the code relies on, and `anyio_tasks.probe` finds the
table. A new anyio or CPython that moves one fails here first, by name, not as
a cancellation that lands in the wrong place. Also: the anyio installed is one
pyproject.toml's bound admits, and the bottom-layer contract names every other
toolweave module.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
import tomllib
import weakref
from importlib.metadata import version
from pathlib import Path

import anyio
import pytest

import toolweave
from toolweave._native import anyio_tasks, deadline
from toolweave._native.clock import fast_clock
from toolweave._native.spawn import open_spawner

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def test_the_installed_anyio_is_within_the_tested_bound() -> None:
    (spec,) = (
        d
        for d in _pyproject()["project"]["dependencies"]  # type: ignore[index]
        if re.match(r"anyio\b", d)
    )
    low = re.search(r">=\s*([\d.]+)", spec)
    high = re.search(r"<\s*([\d.]+)", spec)
    assert low and high, f"anyio must be bounded both ways: {spec!r}"
    installed = _numbers(version("anyio"))
    assert _numbers(low[1]) <= installed < _numbers(high[1])
    for minor in anyio_tasks.NATIVE_ANYIO_MINORS:  # the native path, within the bound
        assert _numbers(low[1])[:2] <= minor < _numbers(high[1])[:2]


def test_this_anyio_is_one_the_native_path_was_proved_on() -> None:
    """Else the suite would test the fallback only: say so, not slow down silently."""
    assert anyio_tasks.anyio_minor() in anyio_tasks.NATIVE_ANYIO_MINORS


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_on_an_anyio_not_proved_the_scope_is_anyios_own(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(anyio_tasks, "anyio_minor", lambda: (4, 15))
    monkeypatch.setattr(anyio_tasks, "probed", False)
    monkeypatch.setattr(anyio_tasks, "task_states", None)
    monkeypatch.setattr(anyio_tasks, "refs", {})
    anyio_tasks.probe()
    assert anyio_tasks.task_states is None
    assert deadline.native_alarm() is None
    scope = deadline.DeadlineScope(0.01)
    assert isinstance(scope._scope, anyio.CancelScope)  # anyio's own
    with scope:
        await anyio.sleep_forever()
    assert scope.expired and scope.cancelled_caught


def test_the_bottom_layer_contract_forbids_every_other_toolweave_module() -> None:
    contracts = _pyproject()["tool"]["importlinter"]["contracts"]  # type: ignore[index]
    (contract,) = (
        c for c in contracts if c.get("source_modules") == ["toolweave._native"]
    )
    src = Path(toolweave.__file__).parent
    others = {
        f"toolweave.{p.stem if p.is_file() else p.name}"
        for p in src.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__")
        or (p.is_dir() and (p / "__init__.py").exists())
    } - {"toolweave._native"}
    assert set(contract["forbidden_modules"]) == others


# -- anyio's asyncio backend -----------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_anyio_keeps_a_weak_task_table_of_task_states(anyio_backend: str) -> None:
    from anyio._backends import _asyncio as backend

    anyio_tasks.probe()
    assert isinstance(backend._task_states, weakref.WeakKeyDictionary)
    assert isinstance(backend._task_states.data, dict)
    assert anyio_tasks.task_states is backend._task_states
    assert anyio_tasks.refs is backend._task_states.data
    task = asyncio.current_task()
    assert task is not None
    with anyio.CancelScope() as outer, anyio.CancelScope(shield=True) as inner:  # noqa: ASYNC100 - entered for their shape
        state = anyio_tasks.refs[weakref.ref(task)]
        assert state.cancel_scope is inner  # the innermost scope
        assert inner._parent_scope is outer
        assert inner.shield is True
        assert outer.shield is False


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_anyio_tells_its_own_cancellations_by_the_message_prefix(
    anyio_backend: str,
) -> None:
    from anyio._backends import _asyncio as backend

    caught: list[BaseException] = []
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.lowlevel.checkpoint()
        except asyncio.CancelledError as exc:
            caught.append(exc)
            raise
    (exc,) = caught
    assert exc.args[0].startswith("Cancelled via cancel scope ")
    ours = asyncio.CancelledError(deadline._REASON.format(id(scope)))
    assert backend.is_anyio_cancellation(ours)
    assert not backend.is_anyio_cancellation(asyncio.CancelledError("by hand"))
    raised = asyncio.CancelledError("by hand")
    raised.__context__ = ours  # along the context chain, as anyio looks
    assert backend.is_anyio_cancellation(raised)


# -- CPython's asyncio -----------------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_task_shows_its_pending_cancel_and_the_future_it_waits_on(
    anyio_backend: str,
) -> None:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    parked = anyio.Event()

    async def waits() -> None:
        parked.set()
        await future

    task = loop.create_task(waits())
    assert task._must_cancel is False
    assert task._fut_waiter is None
    await parked.wait()
    await anyio.lowlevel.checkpoint()
    assert task._fut_waiter is future
    future.set_result(None)
    await task
    fresh = loop.create_task(waits())
    fresh.cancel()  # before its first step: pending, not delivered
    assert fresh._must_cancel is True
    assert fresh.cancelling() == 1
    with pytest.raises(asyncio.CancelledError):
        await fresh


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_stdlib_loop_clock_is_time_monotonic(anyio_backend: str) -> None:
    loop = asyncio.get_running_loop()
    assert getattr(type(loop), "time", None) is asyncio.BaseEventLoop.time
    before = time.monotonic()  # noqa: TID251 - the clock's identity, not a timing
    now = loop.time()
    after = time.monotonic()  # noqa: TID251
    assert before <= now <= after


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_anyio_asyncio_time_is_the_loops_and_fast_clock_binds_it(
    anyio_backend: str,
) -> None:
    loop = asyncio.get_running_loop()
    clock = fast_clock()
    assert clock == loop.time
    first = anyio.current_time()
    middle = clock()
    last = anyio.current_time()
    assert first <= middle <= last


def test_asyncio_taskgroup_has_no_start_soon_of_its_own() -> None:
    assert not hasattr(asyncio.TaskGroup, "start_soon")
    assert inspect.iscoroutinefunction(asyncio.TaskGroup.__aexit__)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_asyncio_spawner_is_a_taskgroup_whose_start_soon_gives_the_task(
    anyio_backend: str,
) -> None:
    async def child() -> None:
        await anyio.lowlevel.checkpoint()

    async with open_spawner() as spawner:
        assert isinstance(spawner, asyncio.TaskGroup)
        task = spawner.start_soon(child)
        assert isinstance(task, asyncio.Task)
    assert task.done()
