"""Recovery by resume: a re-run of a batch continues each unfinished session from the store.

Side effects are counted in a file the tools append to: after any interruption
(a cancelled batch, a SIGKILLed driver) and a re-run, every effect happened
once, each task has one session, and the interrupted call is answered as
``toolweave resume`` answers it, never run again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from cluster_support import effect_lines, recovery_steps, recovery_tools, task_line

from toolweave.cluster import (
    BatchBusyError,
    journal_path,
    load_records,
    parse_tasks,
    run_batch,
)
from toolweave.events import Event, ToolResultReady
from toolweave.sessions import CallState, SQLiteSessionStore

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """trio on its real clock: the batches here wait on worker threads and real
    processes, and the autojump clock would jump to a tool's timeout while a
    stalled call waits to be released (the batch then ended before a second
    driver could be refused, on a loaded machine)."""
    return request.param


def _lines(effects: Path, ids: list[str]) -> list[str]:
    return [task_line(i, recovery_steps(i, str(effects))) for i in ids]


def _expected(ids: list[str]) -> list[str]:
    return sorted(line for i in ids for line in (f"{i} effect", f"{i} stall started"))


def _lost_answer(store: SQLiteSessionStore, session_id: str) -> str:
    """The stored transcript's answer to the session's stall call (which was cut).

    Answered by the resume (the call's row becomes LOST), or already by the
    cut run itself when the batch's cancel reached its loop first.
    """
    stall = [c for c in store.calls(session_id) if c.call.name == "stall"]
    assert len(stall) == 1  # one call, never a second execution
    answers = [
        r.text
        for m in store.messages(session_id)
        for r in m.tool_results
        if r.call_id == "s"
    ]
    assert len(answers) == 1
    return answers[0]


async def _wait_for(condition: Callable[[], bool]) -> None:
    """Wait for a file-backed condition (a tool's side effects), in real time.

    Polled on a worker thread with a real-time bound: trio's test clock is
    virtual and would run out a loop-clock timeout at once.
    """

    def poll() -> bool:
        pause = threading.Event()
        for _ in range(3000):  # 60 s
            if condition():
                return True
            pause.wait(0.02)
        return condition()

    assert await anyio.to_thread.run_sync(poll), "the tools never got there"


async def test_a_cancelled_batch_rerun_resumes_never_reruns(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    ids = ["t0", "t1", "t2"]
    tasks = parse_tasks(_lines(effects, ids))
    output = tmp_path / "results.jsonl"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: run_batch(
                    tasks, output=output, tools=recovery_tools, store=store
                )
            )
            await _wait_for(lambda: len(effect_lines(effects)) == 6)
            tg.cancel_scope.cancel()  # Ctrl-C with every session inside `stall`
        assert output.read_text() == "" and sorted(effect_lines(effects)) == _expected(
            ids
        )
        stats = await run_batch(tasks, output=output, tools=recovery_tools, store=store)
        assert (stats.skipped, stats.completed, stats.failed) == (0, 3, 0), [
            r.reason for r in load_records(output).values()
        ]
        assert sorted(effect_lines(effects)) == _expected(ids)  # nothing ran twice
        sessions = store.list_sessions()
        assert len(sessions) == 3  # one per task, not one per attempt
        records = load_records(output)
        assert {r.session_id for r in records.values()} == {s.id for s in sessions}
        for task_id, record in records.items():
            assert record.ok and record.output == f"{task_id} done"
            assert record.session_id is not None
            answer = _lost_answer(store, record.session_id)
            assert answer.startswith("Interrupted, outcome unknown")
            runs = store.runs(record.session_id)
            assert len(runs) == 2 and runs[-1].state.value == "finished"
            assert runs[-1].reason is not None and runs[-1].reason.value == "completed"
            effect_calls = [
                c for c in store.calls(record.session_id) if c.call.name == "effect"
            ]
            assert [c.run for c in effect_calls] == [1]  # kept, not run in run 2
    finally:
        store.close()


async def test_a_session_that_ended_unreported_is_written_from_the_store(
    tmp_path: Path,
) -> None:
    """The driver died after the session finished, before its line: no second run."""
    effects = tmp_path / "effects.txt"
    (tmp_path / "effects.txt.release").touch()  # stall returns at once
    tasks = parse_tasks(_lines(effects, ["solo"]))
    output = tmp_path / "results.jsonl"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    try:
        first = await run_batch(tasks, output=output, tools=recovery_tools, store=store)
        assert first.completed == 1
        line = load_records(output)["solo"]
        output.write_text("")  # the line never made it to disk
        again = await run_batch(tasks, output=output, tools=recovery_tools, store=store)
        assert (again.completed, again.failed) == (1, 0)
        record = load_records(output)["solo"]
        assert record.session_id == line.session_id and record.output == "solo done"
        assert record.usage == line.usage
        assert effect_lines(effects) == ["solo effect", "solo stall started"]
        assert (
            len(store.list_sessions()) == 1
            and len(store.runs(line.session_id or "")) == 1
        )
    finally:
        store.close()


async def test_retry_failed_resumes_a_crashed_session_keeping_its_results(
    tmp_path: Path,
) -> None:
    effects = tmp_path / "effects.txt"
    (tmp_path / "effects.txt.release").touch()
    tasks = parse_tasks(_lines(effects, ["c"]))
    output = tmp_path / "results.jsonl"
    store = SQLiteSessionStore(tmp_path / "sessions.db")

    def failing_sink(session_id: str, event: Event) -> None:
        if isinstance(event, ToolResultReady) and event.call.name == "effect":
            raise OSError("the sink's disk is full")

    try:
        first = await run_batch(
            tasks, output=output, tools=recovery_tools, store=store, sink=failing_sink
        )
        assert first.failed == 1 and load_records(output)["c"].status == "crashed"
        plain = await run_batch(tasks, output=output, tools=recovery_tools, store=store)
        assert plain.skipped == 1  # without --retry-failed a crashed task stays
        retried = await run_batch(
            tasks,
            output=output,
            tools=recovery_tools,
            store=store,
            retry_failed=True,
        )
        assert retried.completed == 1
        record = load_records(output)["c"]
        assert record.ok and record.output == "c done"
        lines = effect_lines(effects)  # the run may have gone on past the sink
        assert lines[0] == "c effect" and len(lines) == len(set(lines)) <= 2
        assert len(store.list_sessions()) == 1
        calls = store.calls(record.session_id or "")
        assert (calls[0].call.name, calls[0].run) == ("effect", 1)
        assert calls[0].state is CallState.FINISHED  # kept, not run again
        assert [c.call.name for c in calls] == ["effect", "stall"]  # each once
        assert all(c.result is not None for c in calls)
    finally:
        store.close()


async def test_a_second_driver_of_the_same_batch_is_refused(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    (tmp_path / "tasks.jsonl").write_text(_lines(effects, ["a"])[0] + "\n")
    tasks = parse_tasks(_lines(effects, ["a"]))
    output = tmp_path / "results.jsonl"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: run_batch(
                    tasks, output=output, tools=recovery_tools, store=store
                )
            )
            await _wait_for(lambda: len(effect_lines(effects)) == 2)
            with pytest.raises(BatchBusyError, match="another driver"):
                await run_batch(tasks, output=output, tools=recovery_tools, store=store)
            refused = await anyio.run_process(
                [
                    *CLI,
                    "batch",
                    str(tmp_path / "tasks.jsonl"),
                    "--output",
                    str(output),
                    "--store",
                    str(tmp_path / "sessions.db"),
                    "--tools",
                    "cluster_support:recovery_tools",
                    "--no-progress",
                ],
                env=_env(),
                check=False,
                cwd=tmp_path,
            )
            stderr = refused.stderr.decode()
            assert refused.returncode == 2, stderr
            assert "another driver" in stderr
            assert str(journal_path(output)) in "".join(stderr.split())
            (tmp_path / "effects.txt.release").touch()
        assert load_records(output)["a"].ok
        assert effect_lines(effects) == ["a effect", "a stall started"]  # once
    finally:
        store.close()


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def _batch(tmp_path: Path, *extra: str) -> list[str]:
    return [
        *CLI,
        "batch",
        str(tmp_path / "tasks.jsonl"),
        "--store",
        str(tmp_path / "sessions.db"),
        "--tools",
        "cluster_support:recovery_tools",
        "--no-progress",
        *extra,
    ]


def _kill_when(
    proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float
) -> None:
    """SIGKILL `proc` once `ready()` holds (bounded); the test fails if it never does."""
    try:
        for _ in range(int(timeout / 0.02)):
            if ready():
                break
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.02)  # the pause between looks
                raise AssertionError("the driver ended before it was killed")
        else:
            raise AssertionError("the driver never got there")
    finally:
        proc.kill()  # SIGKILL: no cleanup, no last words
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def test_a_sigkilled_batch_cli_rerun_resumes_every_session(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    ids = ["k0", "k1"]
    (tmp_path / "tasks.jsonl").write_text("\n".join(_lines(effects, ids)) + "\n")
    proc = subprocess.Popen(
        _batch(tmp_path, "-j", "2"),
        env=_env(),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _kill_when(proc, lambda: len(effect_lines(effects)) == 4, timeout=60)
    output = tmp_path / "tasks.results.jsonl"
    assert not output.exists() or output.read_text() == ""
    rerun = subprocess.run(
        _batch(tmp_path),
        env=_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(effect_lines(effects)) == _expected(ids)  # nothing ran twice
    records = load_records(output)
    assert sorted(records) == ids and all(r.ok for r in records.values())
    store = SQLiteSessionStore(tmp_path / "sessions.db", read_only=True)
    try:
        sessions = store.list_sessions()
        assert len(sessions) == 2
        assert {s.status for s in sessions} == {"completed"}
        for record in records.values():
            sid = record.session_id or ""
            assert _lost_answer(store, sid).startswith("Interrupted, outcome unknown")
            runs = store.runs(sid)
            assert [r.state.value for r in runs] == ["running", "finished"]
            assert store.lease(sid) is None  # released by the resumed run
        journal = [json.loads(x) for x in journal_path(output).read_text().splitlines()]
        assert sorted(j["task_id"] for j in journal) == ids  # one link per task
    finally:
        store.close()
