"""run_batch in this process: bounded sessions, result lines, re-runs, the store, the CLI."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio
import pytest
from cluster_support import add, batch_tools, ok_steps, step_calls, step_text, task_line
from typer.testing import CliRunner

from toolweave.cli import make_batch_command
from toolweave.cluster import (
    BatchStatistics,
    BatchTask,
    describe_statistics,
    load_records,
    parse_tasks,
    run_batch,
    scripted_spec,
)
from toolweave.events import Event, RunFinished, RunStarted
from toolweave.sessions import SQLiteSessionStore
from toolweave.tools import Access, Concurrency, Tool, tool

pytestmark = pytest.mark.anyio


class Gate:
    """A tool whose calls wait at a gate, counting how many are inside at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.peak = 0
        self.entered = 0
        self.release = anyio.Event()
        self._arrived = anyio.Event()

    async def wait_inside(self, count: int) -> None:
        """Return once `count` calls are inside (a rendezvous: the store's writer
        thread may still hold a call at its start barrier when every task blocks)."""
        with anyio.fail_after(60):
            while self.inside < count:
                await self._arrived.wait()

    def tools(self, task: BatchTask) -> list[Tool]:
        del task

        @tool(concurrency=Concurrency.SAFE, access=lambda args: Access())
        async def wait() -> str:
            """Wait at the gate."""
            self.inside += 1
            self.entered += 1
            self.peak = max(self.peak, self.inside)
            self._arrived.set()
            self._arrived = anyio.Event()
            await self.release.wait()
            self.inside -= 1
            return "through"

        return [wait, add]


def _gated(task_id: str) -> str:
    return task_line(
        task_id, [step_calls(("g", "wait", {})), step_text(f"{task_id} done")]
    )


async def test_sessions_are_bounded_and_each_writes_one_line(tmp_path: Path) -> None:
    gate = Gate()
    tasks = parse_tasks([_gated(f"t{n}") for n in range(5)])
    output = tmp_path / "results.jsonl"
    updates: list[BatchStatistics] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run_batch(
                tasks,
                output=output,
                tools=gate.tools,
                max_sessions=2,
                on_update=updates.append,
            )
        )
        await gate.wait_inside(2)
        await anyio.wait_all_tasks_blocked()
        assert gate.inside == 2  # the cap is reached ...
        assert updates[-1].running == 2 and not output.read_text()
        gate.release.set()
    assert gate.peak == 2  # ... and never exceeded
    records = load_records(output)
    assert sorted(records) == [f"t{n}" for n in range(5)]
    assert {r.output for r in records.values()} == {f"t{n} done" for n in range(5)}
    assert {(r.status, r.placement) for r in records.values()} == {
        ("completed", "local")
    }
    final = updates[-1]
    assert (final.completed, final.failed, final.running, final.remaining) == (
        5,
        0,
        0,
        0,
    )
    assert final.tokens == 5 * 38
    assert max(u.running for u in updates) == 2


async def test_failures_are_recorded_and_the_batch_goes_on(tmp_path: Path) -> None:
    lines = [
        task_line("ok", ok_steps(1)),
        task_line("model-error", [{"error": "no luck"}]),
        task_line("out-of-script", [step_calls(("a", "add", {"a": 1, "b": 2}))]),
        task_line("budget", ok_steps(2), budget={"max_iterations": 1}),
        json.dumps({"id": "no-model", "prompt": "p"}),
        "{torn",
    ]
    output = tmp_path / "results.jsonl"
    stats = await run_batch(parse_tasks(lines), output=output, tools=batch_tools)
    records = load_records(output)
    assert len(records) == 6 and len(output.read_text().splitlines()) == 6
    assert records["ok"].status == "completed"
    assert (
        records["model-error"].status,
        records["model-error"].completion_reason,
    ) == (
        "failed",
        "error",
    )
    assert "no luck" in records["model-error"].reason
    assert records["out-of-script"].status == "failed"
    assert "unexpected call #2" in records["out-of-script"].reason
    assert records["budget"].completion_reason == "max_iterations"
    assert records["no-model"].status == "crashed"
    assert records["no-model"].reason.startswith("ConfigError: no model")
    (torn,) = [r for r in records.values() if r.status == "invalid"]
    assert torn.line == 6 and "not valid JSON" in torn.reason
    assert (stats.completed, stats.failed) == (1, 5)


async def test_a_rerun_skips_what_is_done_and_can_retry_failures(
    tmp_path: Path,
) -> None:
    lines = [task_line("ok", ok_steps(1)), task_line("bad", [{"error": "flaky"}])]
    output = tmp_path / "results.jsonl"
    await run_batch(parse_tasks(lines), output=output, tools=batch_tools)
    before = output.read_text()
    again = await run_batch(parse_tasks(lines), output=output, tools=batch_tools)
    assert (again.skipped, again.completed, again.failed) == (2, 0, 0)
    assert output.read_text() == before
    fixed = [lines[0], task_line("bad", ok_steps(3))]
    retried = await run_batch(
        parse_tasks(fixed), output=output, tools=batch_tools, retry_failed=True
    )
    assert (retried.skipped, retried.completed) == (1, 1)
    assert load_records(output)["bad"].output == "answer 3"
    assert len(output.read_text().splitlines()) == 3


async def test_driver_records_every_session_in_the_store(tmp_path: Path) -> None:
    lines = [task_line(f"s{n}", ok_steps(n)) for n in range(3)]
    lines.append(json.dumps({"id": "boom", "prompt": "p", "model": "scripted:[{}"}))
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    seen: dict[str, list[Event]] = defaultdict(list)

    def sink(session_id: str, event: Event) -> None:
        seen[session_id].append(event)

    output = tmp_path / "results.jsonl"
    await run_batch(
        parse_tasks(lines), output=output, tools=batch_tools, store=store, sink=sink
    )
    records = load_records(output)
    stored = {s.id: s for s in store.list_sessions()}
    assert set(stored) == {r.session_id for r in records.values()}
    for n in range(3):
        record = records[f"s{n}"]
        events = seen[record.session_id or ""]
        assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
        assert stored[record.session_id or ""].status == "completed"
        assert stored[record.session_id or ""].title == f"prompt of s{n}"
        assert stored[record.session_id or ""].model == "scripted"
        assert len(store.messages(record.session_id or "")) == 4
    assert (
        records["boom"].status == "crashed" and "invalid JSON" in records["boom"].reason
    )
    store.close()


async def test_a_failing_sink_crashes_only_its_session(tmp_path: Path) -> None:
    lines = [task_line(f"s{n}", ok_steps(n)) for n in range(3)]
    victims: set[str] = set()

    def sink(session_id: str, event: Event) -> None:
        if isinstance(event, RunStarted) and not victims:
            victims.add(session_id)
        if session_id in victims and not isinstance(event, RunStarted):
            raise OSError("disk full")

    output = tmp_path / "results.jsonl"
    stats = await run_batch(
        parse_tasks(lines), output=output, tools=batch_tools, sink=sink
    )
    assert (stats.completed, stats.failed) == (2, 1)
    (crashed,) = [r for r in load_records(output).values() if r.status == "crashed"]
    assert crashed.reason == "StoreError: the event sink failed: disk full"
    assert crashed.session_id in victims


async def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_sessions"):
        await run_batch([], output=tmp_path / "o.jsonl", max_sessions=0)
    stats = await run_batch([], output=tmp_path / "o.jsonl")
    assert stats == BatchStatistics(0, 0, 0, 0, 0, 0, 0.0)


def test_statistics_line() -> None:
    stats = BatchStatistics(10, 2, 3, 4, 1, 12345, 0.5)
    assert describe_statistics(stats) == (
        "done 4 · running 3 · failed 1 · skipped 2 · 12,345 tokens · $0.5000"
    )
    assert (stats.finished, stats.remaining) == (5, 3)


def _cli(store: Path) -> Any:
    import typer

    app = typer.Typer()
    app.command("batch")(
        make_batch_command(lambda path: SQLiteSessionStore(path or store))
    )
    app.command("noop")(lambda: None)
    return app


def test_batch_command_runs_locally_and_reruns_nothing(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    lines = [task_line(f"c{n}", ok_steps(n)) for n in range(3)]
    lines.append(task_line("bad", [{"error": "nope"}]))
    tasks.write_text("\n".join(lines) + "\n")
    store = tmp_path / "db" / "sessions.db"
    app = _cli(store)
    argv = ["batch", str(tasks), "--tools", "cluster_support:batch_tools", "-j", "2"]
    first = CliRunner().invoke(app, argv)
    assert first.exit_code == 0, first.output
    assert "4 tasks · done 3 · running 0 · failed 1" in first.output
    records = load_records(tmp_path / "tasks.results.jsonl")
    assert sorted(records) == ["bad", "c0", "c1", "c2"]
    assert len(SQLiteSessionStore(store).list_sessions()) == 4
    second = CliRunner().invoke(app, [*argv, "--no-progress"])
    assert second.exit_code == 0, second.output
    assert "done 0 · running 0 · failed 0 · skipped 4" in second.output


def test_batch_command_reports_bad_input(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        json.dumps({"prompt": "p", "model": scripted_spec([step_text("x")])})
    )
    app = _cli(tmp_path / "s.db")
    missing = CliRunner().invoke(app, ["batch", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2
    bad_store = CliRunner().invoke(
        app, ["batch", str(tasks), "--store", str(tmp_path / "tasks.jsonl" / "x.db")]
    )
    assert bad_store.exit_code == 2 and "error" in bad_store.output


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--session-resources", "{nope", "--session-resources: not valid JSON"),
        ("--session-resources", "[1, 2]", "must be a JSON object, got list"),
        ("--session-resources", '{"gpu": -1}', "'gpu' must be a number >= 0"),
        ("--session-resources", '{"gpu": true}', "'gpu' must be a number >= 0"),
        ("--session-resources", "missing.json", "neither a JSON object nor a"),
        ("--runtime-env", "missing.json", "--runtime-env: 'missing.json' is neither"),
        ("--runtime-env", '{"env_vars": ', "--runtime-env: not valid JSON"),
    ],
)
def test_batch_command_refuses_bad_ray_options_before_running(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    value: str,
    words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_line("only", ok_steps(1)) + "\n")
    argv = ["batch", str(tasks), "--tools", "none", "--ray", option, value]
    result = CliRunner().invoke(_cli(tmp_path / "s.db"), argv)
    assert result.exit_code == 2, result.output
    assert words in " ".join(result.output.split())
    assert not (tmp_path / "tasks.results.jsonl").exists()  # nothing ran


def test_session_resources_merge_over_session_cpus(tmp_path: Path) -> None:
    from toolweave.cli._ray_options import json_object, session_resources

    assert session_resources(0.0, None) == {"num_cpus": 0.0}
    assert session_resources(0.0, '{"node_b": 1}') == {"num_cpus": 0.0, "node_b": 1.0}
    assert session_resources(1.0, '{"num_cpus": 0.5}') == {"num_cpus": 0.5}
    env = tmp_path / "env.json"
    env.write_text('{"env_vars": {"A": "1"}}')
    assert json_object(str(env), "--runtime-env") == {"env_vars": {"A": "1"}}
    assert json_object(' {"pip": ["x"]}', "--runtime-env") == {"pip": ["x"]}


def test_toolweave_batch_is_registered_on_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolweave.cli import app

    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_line("only", ok_steps(1)) + "\n")
    result = CliRunner().invoke(
        app,
        [
            "batch",
            str(tasks),
            "--tools",
            "cluster_support:batch_tools",
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert load_records(tmp_path / "tasks.results.jsonl")["only"].ok
    assert (tmp_path / "home" / "sessions.db").exists()


async def test_an_interrupted_batch_writes_nothing_for_unfinished_sessions(
    tmp_path: Path,
) -> None:
    gate = Gate()
    tasks = parse_tasks([_gated(f"t{n}") for n in range(3)])
    output = tmp_path / "results.jsonl"
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run_batch(
                tasks, output=output, tools=gate.tools, store=store, max_sessions=2
            )
        )
        await gate.wait_inside(2)
        await anyio.wait_all_tasks_blocked()
        assert gate.inside == 2  # and no third: the batch's cap
        tg.cancel_scope.cancel()  # Ctrl-C
    assert output.read_text() == ""
    assert sorted(s.status for s in store.list_sessions()) == ["abandoned", "abandoned"]
    gate.release.set()
    stats = await run_batch(
        tasks, output=output, tools=gate.tools, store=store, max_sessions=2
    )
    assert (stats.skipped, stats.completed) == (0, 3)
    assert len(store.list_sessions()) == 3  # the two cut sessions were resumed
    assert gate.entered == 3  # their cut calls answered, never run again
    store.close()
