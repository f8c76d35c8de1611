"""A finished run leaves nothing running: abandoned worker threads never hold the process.

Python's exit joins every non-daemon thread; anyio's worker threads on asyncio
are not daemons. Sync tool functions therefore run on daemon threads
(`toolweave._native.daemon_pool`), on both backends. Shown with real
subprocesses (the exit is the thing under test) and, for the pool's contract,
by rendezvous.
"""

from __future__ import annotations

import contextvars
import subprocess
import sys
import textwrap
import threading
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from toolweave._native.daemon_pool import run_on_daemon_thread
from toolweave._native.threads import ThreadAbandoned
from toolweave.tools import check_cancelled, run_in_worker_thread

pytestmark = pytest.mark.anyio

_STUCK_RUN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import toolweave as tw
    from toolweave.messages import ModelResponse, StopReason, Text, ToolCall
    from toolweave.models import ScriptedModel

    late = Path(sys.argv[2])

    @tw.tool(timeout=0.5)
    def stuck() -> str:
        \"\"\"Sleep past the timeout, then leave a mark.\"\"\"
        time.sleep(20)
        late.write_text("the thread outlived the run")
        return "late"

    model = ScriptedModel([
        ModelResponse([ToolCall("c1", "stuck", {})], StopReason.TOOL_USE),
        ModelResponse([Text("done")], StopReason.END_TURN),
    ])
    result = tw.Agent(model, [stuck]).run_sync("go", backend=sys.argv[1])
    print(result.messages[2].content[0].content, flush=True)
    print("returned", flush=True)
    """
)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.timeout(60)
def test_a_stuck_sync_tool_does_not_keep_the_process_alive(
    tmp_path: Path, backend: str
) -> None:
    script = tmp_path / "stuck.py"
    script.write_text(_STUCK_RUN)
    late = tmp_path / "late.txt"
    with subprocess.Popen(
        [sys.executable, str(script), backend, str(late)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            answer = proc.stdout.readline()
            assert proc.stdout.readline() == "returned\n"
            # A liveness bound, not a speed test: the thread sleeps 20 s on; the
            # exit must not wait for it (TimeoutExpired fails the test).
            _, stderr = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    code = proc.returncode
    assert code == 0, stderr
    assert "timed out after 0.5 s" in answer, answer
    assert not late.exists()


async def test_pool_threads_are_daemons_and_see_the_callers_context() -> None:
    var = contextvars.ContextVar("var", default="unset")
    var.set("caller")

    def probe() -> tuple[bool, str]:
        return threading.current_thread().daemon, var.get()

    daemon, seen = await run_in_worker_thread(probe)
    assert daemon and seen == "caller"


async def test_errors_come_back_to_the_caller_as_themselves() -> None:
    class Boom(Exception):
        pass

    def fail() -> None:
        raise Boom("x")

    with pytest.raises(Boom, match="x"):
        await run_on_daemon_thread(fail)


async def test_the_limiter_bounds_the_threads_and_is_reached() -> None:
    limiter = anyio.CapacityLimiter(2)
    changed = threading.Condition()
    inside = peak = 0
    release = threading.Event()

    def work() -> None:
        nonlocal inside, peak
        with changed:
            inside += 1
            peak = max(peak, inside)
            changed.notify_all()
        release.wait(10)
        with changed:
            inside -= 1

    def two_inside() -> bool:
        with changed:
            return changed.wait_for(lambda: inside == 2, timeout=10)

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(partial(run_on_daemon_thread, work, limiter=limiter))
        assert await anyio.to_thread.run_sync(two_inside)  # the cap was reached
        await anyio.wait_all_tasks_blocked()
        assert limiter.statistics().tasks_waiting == 3
        release.set()
    assert peak == 2  # ... and never exceeded


async def test_an_abandoned_thread_stops_at_its_next_check() -> None:
    """A cancelled caller returns at once; `check_cancelled` then ends the thread's loop."""
    started, stopped = threading.Event(), threading.Event()
    rounds = 0

    def loop() -> None:
        nonlocal rounds
        started.set()
        try:
            while True:
                rounds += 1
                check_cancelled()
                threading.Event().wait(0.001)
        except ThreadAbandoned:
            stopped.set()
            raise

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await run_in_worker_thread(loop, abandon_on_cancel=True)

            tg.start_soon(call)
            await anyio.to_thread.run_sync(started.wait)
            scope.cancel()
    assert await anyio.to_thread.run_sync(stopped.wait, 10)
    assert rounds >= 1


async def test_without_abandon_a_cancel_waits_for_the_function() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []
    scopes: list[anyio.CancelScope] = []

    def work() -> str:
        started.set()
        release.wait(10)
        finished.append("done")
        return "done"

    async def call() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await run_in_worker_thread(work)
            await anyio.lowlevel.checkpoint()  # the cancel lands once it returned
        finished.append("call ended")

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await anyio.to_thread.run_sync(started.wait)
        scopes[0].cancel()
        await anyio.wait_all_tasks_blocked()
        assert finished == []  # the caller still waits for its function
        release.set()
    assert finished == ["done", "call ended"] and scopes[0].cancelled_caught


def test_check_cancelled_outside_a_worker_does_nothing() -> None:
    check_cancelled()
