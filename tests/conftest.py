"""Shared fixtures: every async test runs on asyncio and on trio with virtual time."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio.testing

from extras import module_needing_extra
from temp_trees import MAX_LEFT_DEPTH, remove_stuck_garbage, too_deep


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(
    module_path: Path, parent: pytest.Collector
) -> pytest.Module | None:
    """A framework's test module without its extra is one skip naming the extra."""
    return module_needing_extra(module_path, parent)


_real_connect = socket.socket.connect
_LOOPBACK_PREFIXES = ("127.", "::1", "localhost")


def _guarded_connect(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    inet = self.family in (socket.AF_INET, socket.AF_INET6)
    if inet and isinstance(host, str) and not host.startswith(_LOOPBACK_PREFIXES):
        raise AssertionError(f"test tried a non-loopback address: {address!r}")
    return _real_connect(self, address)


@pytest.fixture(scope="session", autouse=True)
def _temp_trees_stay_removable(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """After the session: no test left a tree pytest's own clean-up cannot remove.

    pytest removes old temp roots with ``shutil.rmtree``, which recurses once
    per level: a tree left 1,500 levels deep made every pytest run on the
    machine from the fourth on end in a RecursionError (see `temp_trees`).
    Such a tree left by an earlier run is removed first, so one bad run does
    not fail every later one.
    """
    remove_stuck_garbage(tmp_path_factory.getbasetemp().parent)
    yield
    offenders = too_deep(tmp_path_factory.getbasetemp())
    assert not offenders, (
        f"tests left directory trees deeper than {MAX_LEFT_DEPTH} levels, which"
        " pytest's clean-up cannot remove; remove them with"
        f" temp_trees.remove_tree in a finalizer: {offenders}"
    )


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any test that tries to reach a non-loopback address."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """asyncio, and trio with an autojumping MockClock (virtual time)."""
    if request.param == "trio":
        return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
    return "asyncio"


def _running_mock_clock() -> Any:
    """The MockClock of the running trio loop, or None (asyncio, or no loop)."""
    try:
        import sniffio
        import trio.lowlevel

        if sniffio.current_async_library() != "trio":
            return None
        clock = trio.lowlevel.current_clock()
    except Exception:
        return None
    return clock if isinstance(clock, trio.testing.MockClock) else None


@pytest.fixture(autouse=True)
def _patient_autojump_around_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a worker thread runs, trio's MockClock waits 0.25 s (real) idle before a jump.

    Every tool call now runs under a deadline (issue 13, item 3). With an
    autojump threshold of 0 the clock jumps to that deadline the moment the
    loop is idle — which it is while a worker thread does real work — so a
    quick file read would "time out". Virtual time is untouched otherwise.
    """
    import anyio.to_thread

    real = anyio.to_thread.run_sync
    state = {"in_flight": 0, "saved": 0.0}

    async def run_sync(func: Any, *args: Any, **kwargs: Any) -> Any:
        clock = _running_mock_clock()
        if clock is None:
            return await real(func, *args, **kwargs)
        if state["in_flight"] == 0:
            state["saved"] = clock.autojump_threshold
            clock.autojump_threshold = max(state["saved"], 0.25)
        state["in_flight"] += 1
        try:
            return await real(func, *args, **kwargs)
        finally:
            state["in_flight"] -= 1
            if state["in_flight"] == 0:
                clock.autojump_threshold = state["saved"]

    monkeypatch.setattr(anyio.to_thread, "run_sync", run_sync)


def _hypothesis_profiles() -> None:
    import os

    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "ci",
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    settings.register_profile(
        "dev",
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    settings.register_profile(  # TOOLWEAVE_HYPOTHESIS=stress: a long hunt for rare interleavings
        "stress",
        max_examples=10_000,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    chosen = os.environ.get("TOOLWEAVE_HYPOTHESIS") or (
        "ci" if os.environ.get("CI") else "dev"
    )
    settings.load_profile(chosen)


_hypothesis_profiles()


@pytest.fixture
def crash_copy() -> Any:
    """Copy a session store as a process killed now would leave it on disk.

    ``crash_copy(store, dest)`` makes a consistent copy of the database (SQLite's
    backup API, so committed transactions only) and of its blobs, and opens it:
    what a successor process finds after a crash at this instant. Call it once
    the writes that should be on disk are durable (``await recorder.flush()``).
    """
    import shutil
    import sqlite3

    from toolweave.sessions import SQLiteSessionStore

    def copy(store: SQLiteSessionStore, dest: Path) -> SQLiteSessionStore:
        source = sqlite3.connect(store.path)
        target = sqlite3.connect(dest)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
        if store.blobs.root.exists():
            shutil.copytree(store.blobs.root, dest.with_name(dest.name + ".blobs"))
        return SQLiteSessionStore(dest, blob_threshold=store.blobs.threshold)

    return copy
