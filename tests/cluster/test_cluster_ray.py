"""Sessions and tools on a real local Ray cluster.

The async tests run on asyncio only. Ray's work happens in other processes in
real time, and trio's MockClock jumps virtual time past every deadline as soon
as the loop waits on a process. The code under test is anyio and
backend-neutral (it waits for Ray on worker threads); the local-batch tests
run it on both backends.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from cluster_support import (
    BIG_OUTPUT,
    Rendezvous,
    batch_tools,
    dump_steps,
    dump_tools,
    fail,
    hang,
    ok_steps,
    probe,
    refuse,
    remote_crash,
    step_calls,
    step_text,
    task_line,
)
from typer.testing import CliRunner

from toolweave.cli import make_batch_command
from toolweave.cluster import (
    RayTool,
    load_records,
    model_from_spec,
    ray_tools,
    run_batch,
    scripted_spec,
)
from toolweave.events import (
    CompletionReason,
    Event,
    RunFinished,
    RunStarted,
    ToolProgress,
    ToolResultReady,
    ToolRunning,
    ToolUseStarted,
)
from toolweave.loop import Agent, AgentConfig, RunResult
from toolweave.messages import ToolResult
from toolweave.scheduling import ConcurrencyConfig
from toolweave.sessions import SQLiteSessionStore, results_dir_beside

pytestmark = [pytest.mark.ray, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only (see the module docstring)."""
    return "asyncio"


def _rendezvous(ray: Any, group: int) -> tuple[str, Any]:
    name = f"rendezvous-{uuid.uuid4().hex[:8]}"
    return name, ray.remote(Rendezvous).options(name=name).remote(group)


async def _get(ray: Any, ref: Any) -> Any:
    return await anyio.to_thread.run_sync(ray.get, ref)


def _results(result: RunResult, message: int = 2) -> list[ToolResult]:
    return list(result.messages[message].tool_results)


async def _run(agent: Agent) -> tuple[RunResult, list[Event]]:
    events: list[Event] = []
    with anyio.fail_after(90):
        async for event in agent.run_stream("go"):
            events.append(event)
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    return (
        RunResult(finished.output, finished.reason, messages=finished.messages),
        events,
    )


# -- a batch of sessions across Ray workers ------------------------------------------------


def _batch_lines() -> tuple[list[str], list[str]]:
    lines = [task_line(f"t{n:02d}", ok_steps(n)) for n in range(47)]
    lines.append(task_line("model-error", [{"error": "scripted failure"}]))
    lines.append(
        task_line("worker-crash", [step_calls(("x", "crash", {})), step_text("never")])
    )
    lines.append(
        json.dumps(
            {"id": "bad-script", "prompt": "p", "model": 'scripted:[{"nope": 1}]'}
        )
    )
    ids = [f"t{n:02d}" for n in range(47)] + [
        "model-error",
        "worker-crash",
        "bad-script",
    ]
    return lines, ids


async def test_batch_of_50_sessions_on_ray_with_3_failing(
    ray_cluster: Any, tmp_path: Path
) -> None:
    lines, ids = _batch_lines()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    output = tmp_path / "results.jsonl"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    driver = (os.getpid(), threading.get_ident())
    seen: list[tuple[str, Event, tuple[int, int]]] = []

    def sink(session_id: str, event: Event) -> None:
        seen.append((session_id, event, (os.getpid(), threading.get_ident())))

    options: dict[str, Any] = {
        "output": output,
        "tools": batch_tools,
        "store": store,
        "sink": sink,
        "ray": True,
        "max_sessions": 4,
        "session_resources": {"num_cpus": 1},
    }
    with anyio.fail_after(100):
        stats = await run_batch(tasks, **options)
    counts = (stats.total, stats.completed, stats.failed, stats.skipped, stats.running)
    assert counts == (50, 47, 3, 0, 0)
    # The crashed session made one model call (15 tokens), but its worker died
    # right after: whether that call's event reached the driver before the crash
    # is a race no test can pin. Every completed session's tokens must count.
    assert stats.tokens in (47 * 38, 47 * 38 + 15)

    # every task has exactly one result line
    raw = output.read_text().splitlines()
    assert len(raw) == 50
    records = load_records(output)
    assert sorted(records) == sorted(ids)
    for n in range(47):
        record = records[f"t{n:02d}"]
        assert (record.status, record.placement) == ("completed", "ray")
        assert record.output == f"answer {n}"
        assert (record.usage.input_tokens, record.usage.output_tokens) == (30, 8)
    failed = records["model-error"]
    assert (failed.status, failed.completion_reason) == ("failed", "error")
    assert "scripted failure" in failed.reason
    crashed = records["worker-crash"]
    assert crashed.status == "crashed" and "WorkerCrashedError" in crashed.reason
    invalid = records["bad-script"]
    assert invalid.status == "crashed" and "ConfigError" in invalid.reason

    # the driver alone got every event (and wrote the store), session by session in order
    assert {where for _, _, where in seen} == {driver}
    by_session: dict[str, list[Event]] = defaultdict(list)
    for session_id, event, _ in seen:
        by_session[session_id].append(event)
    for n in range(47):
        events = by_session[records[f"t{n:02d}"].session_id or ""]
        assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
        whoami = [r for r in events[-1].messages[2].tool_results if r.call_id == "w"]
        assert whoami[0].text != str(os.getpid())  # the session really ran in a worker
    # The crashed worker streamed some or none of its events before dying (a race),
    # but never a RunFinished.
    crashed_events = by_session[crashed.session_id or ""]
    assert not any(isinstance(e, RunFinished) for e in crashed_events)

    # one SQLite file holds every session, written as they ran
    stored = {s.id: s for s in store.list_sessions(limit=100)}
    assert len(stored) == 50
    assert {r.session_id for r in records.values()} == set(stored)
    assert stored[records["t05"].session_id or ""].status == "completed"
    assert len(store.messages(records["t05"].session_id or "")) == 4
    assert stored[crashed.session_id or ""].status == "abandoned"

    # a re-run does nothing new
    before = output.read_bytes()
    seen.clear()
    with anyio.fail_after(30):
        again = await run_batch(tasks, **options)
    assert (again.skipped, again.completed, again.failed) == (50, 0, 0)
    assert output.read_bytes() == before
    assert seen == [] and len(store.list_sessions(limit=100)) == 50
    store.close()


# -- remote tools under the Dispatcher ----------------------------------------------------


def _probe_agent(name: str, tags: list[str], cap: int) -> Agent:
    calls = [(t, "probe", {"tag": t, "rendezvous": name}) for t in tags]
    model = model_from_spec(scripted_spec([step_calls(*calls), step_text("done")]))
    config = AgentConfig(concurrency=ConcurrencyConfig(max_concurrency=cap))
    return Agent(model, ray_tools([probe]), config=config)


async def test_ray_placed_tools_keep_order_and_caps(ray_cluster: Any) -> None:
    name, actor = _rendezvous(ray_cluster, 2)  # a wave passes only if 2 calls overlap
    tags = ["p1", "p2", "p3", "p4"]
    agent = _probe_agent(name, tags, cap=2)
    assert isinstance(agent.registry.get("probe"), RayTool)
    result, events = await _run(agent)
    assert result.completion_reason is CompletionReason.COMPLETED

    started = [e.call.id for e in events if isinstance(e, ToolUseStarted)]
    assert started == tags  # admitted in call order
    in_flight, peak = 0, 0
    for event in events:
        if isinstance(event, ToolRunning):
            in_flight += 1
            peak = max(peak, in_flight)
        elif isinstance(event, ToolResultReady):
            in_flight -= 1
    assert peak == 2  # the host cap was reached and never exceeded

    results = _results(result)
    assert [r.call_id for r in results] == tags  # results in call order
    assert all(not r.is_error and r.text.startswith(f"{r.call_id}:") for r in results)
    assert all(r.text.split(":")[1] != str(os.getpid()) for r in results)
    state = await _get(ray_cluster, actor.state.remote())
    assert state["peak"] == 2 and sorted(state["finished"]) == tags
    progress = {(e.call_id, e.message) for e in events if isinstance(e, ToolProgress)}
    assert progress == {(t, f"{t} started") for t in tags}


async def test_remote_failures_are_isolated(ray_cluster: Any) -> None:
    name, _ = _rendezvous(ray_cluster, 1)
    calls = [
        ("f", "fail", {"message": "boom"}),
        ("r", "refuse", {"path": "/nope"}),
        ("c", "remote_crash", {}),
        ("p", "probe", {"tag": "p", "rendezvous": name}),
    ]
    model = model_from_spec(scripted_spec([step_calls(*calls), step_text("done")]))
    agent = Agent(model, ray_tools([fail, refuse, remote_crash, probe]))
    result, _ = await _run(agent)
    assert result.completion_reason is CompletionReason.COMPLETED
    failed, refused, crashed, fine = _results(result)
    assert [r.call_id for r in (failed, refused, crashed, fine)] == ["f", "r", "c", "p"]
    assert failed.is_error and "ValueError: boom" in failed.text
    assert (
        refused.is_error and refused.text == "no such file: /nope"
    )  # ToolError's own words
    assert crashed.is_error and "WorkerCrashedError" in crashed.text
    assert not fine.is_error and fine.text.startswith("p:")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_cancelled_remote_call_cancels_its_ray_task(ray_cluster: Any) -> None:
    name, actor = _rendezvous(ray_cluster, 1)
    model = model_from_spec(
        scripted_spec([step_calls(("h", "hang", {"tag": "h", "rendezvous": name}))])
    )
    agent = Agent(model, ray_tools([hang]))
    events: list[Event] = []
    with anyio.fail_after(90):
        async with agent.open_run("go") as run, anyio.create_task_group() as tg:

            async def consume() -> None:
                async for event in run.events():
                    events.append(event)

            tg.start_soon(consume)
            pid = (await _get(ray_cluster, actor.wait_pid.remote()))["h"]
            assert _alive(pid)
            run.interrupt()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.INTERRUPTED
    (answer,) = _results(run.result)
    assert answer.synthetic and answer.is_error
    # force-cancelling the Ray task killed the worker that ran it
    for _ in range(600):  # up to 30 s
        if not _alive(pid):
            break
        await anyio.sleep(0.05)
    else:
        pytest.fail(f"worker {pid} still alive after its task was cancelled")
    state = await _get(ray_cluster, actor.state.remote())
    assert state["finished"] == []


# -- the command line, joining the running cluster -----------------------------------------


def test_batch_command_on_ray(ray_cluster: Any, tmp_path: Path) -> None:
    import typer

    app = typer.Typer()
    app.command("batch")(make_batch_command())
    app.command("noop")(lambda: None)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "\n".join(task_line(f"c{n}", ok_steps(n)) for n in range(3)) + "\n"
    )
    argv = [
        "batch",
        str(tasks),
        "--ray",
        "--no-progress",
        "--tools",
        "cluster_support:batch_tools",
        "--no-store",
        "--session-cpus",
        "1",
    ]
    outcome = CliRunner().invoke(app, argv)
    assert outcome.exit_code == 0, outcome.output
    records = load_records(tmp_path / "tasks.results.jsonl")
    assert sorted(records) == ["c0", "c1", "c2"]
    assert {(r.status, r.placement) for r in records.values()} == {("completed", "ray")}
    assert "done 3" in outcome.output


async def test_ray_sessions_save_large_output_beside_the_store(
    ray_cluster: Any, tmp_path: Path
) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_line("big", dump_steps("big")) + "\n")
    with anyio.fail_after(60):
        stats = await run_batch(
            tasks,
            output=tmp_path / "out.jsonl",
            tools=dump_tools,
            store=store,
            ray=True,
        )
    assert stats.completed == 1
    (session,) = store.list_sessions(limit=10)
    (saved,) = (results_dir_beside(store.path, session.id) / "tool-results").iterdir()
    assert saved.read_text() == BIG_OUTPUT
    store.close()
