"""Fault injection, the session store: what a run does when its store fails for real.

Each row: the fault, how it is made, what must hold.

- busy, shorter than the bound (a second process holds ``BEGIN EXCLUSIVE``):
  the event loop runs on; the call waits at its start barrier; everything is
  written once the lock is gone.
- locked past the bound, mid-run: the run ends ERROR naming the store and the
  lock; no call starts unrecorded; on resume what ran is "outcome unknown".
- locked past the bound, at the start: nothing runs; the error names the store
  (the CLI exits 2).
- full (a small tmpfs filled while a tool runs): as locked; no partial blob or
  saved result is left; once space is freed, a call that ran is never "not run".
- full (``toolweave run`` under RLIMIT_FSIZE): exit 1 and a note naming the
  store; the next call never runs.
- read-only (a read-only bind mount): ``sessions``, ``show`` and ``timeline``
  read it; writes raise StoreError.
- damaged (a row or blob spoiled on disk): StoreError naming the session and
  the row; ``show`` and ``resume`` exit 2 with one line.
- double resume (two real ``toolweave resume`` processes at once): exactly one
  runs, the side effect happens once; the other is refused naming the holder.

Library rows run on asyncio and trio. Real components only: SQLite files on
disk, a second process's lock, tmpfs, bind mounts, the CLI as a subprocess.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from store_faults_support import (  # noqa: F401 - the fixtures are used by name
    LockHolder,
    fill,
    lock_holder_fixture,
    read_only_view_fixture,
    small_fs_fixture,
)
from typer.testing import CliRunner

from toolweave._exceptions import SessionBusyError, StoreError
from toolweave.cli import app
from toolweave.events import CompletionReason, ToolUseStarted
from toolweave.execution import Hooks, PreToolUseInput
from toolweave.loop import Agent, AgentConfig
from toolweave.messages import (
    Message,
    ModelResponse,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from toolweave.models import ScriptedModel
from toolweave.sessions import (
    CallRecord,
    CallState,
    RunState,
    SessionRecorder,
    SQLiteSessionStore,
    prepare_resume,
)
from toolweave.tools import Access, Concurrency, SessionState, Tool, tool

DEAD_OWNER = f"{os.uname().nodename}:{2**22 + 4321}"  # above pid_max: never alive
CLI = [sys.executable, "-c", "from toolweave.cli import main; main()"]
BIG = 40_000  # a result over the store's blob threshold and the tools' max_result_chars


def _use(*calls: ToolCall) -> ModelResponse:
    return ModelResponse(list(calls), StopReason.TOOL_USE, Usage(10, 5))


def _say(text: str) -> ModelResponse:
    return ModelResponse([Text(text)], StopReason.END_TURN, Usage(10, 5))


class Bench:
    """`gate` holds until released (the moment a fault is injected); `touch` is the side effect."""

    def __init__(self, *, gate_output: int = 10) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.effects: Counter[str] = Counter()
        self._size = gate_output

    def tools(self) -> list[Tool]:
        bench = self

        @tool(
            concurrency=Concurrency.SAFE,
            access=lambda a: Access(),
            max_result_chars=20_000,
        )
        async def gate() -> str:
            """Wait for the test."""
            bench.effects["gate"] += 1
            bench.entered.set()
            await bench.release.wait()
            return "g" * bench._size

        @tool(access=lambda a: Access(writes=[f"k:{a['key']}"]))
        async def touch(key: str) -> str:
            """A side effect."""
            bench.effects[f"touch {key}"] += 1
            return f"touched {key}"

        return [gate, touch]


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            _use(ToolCall("g", "gate", {})),
            _use(ToolCall("t", "touch", {"key": "a"})),
            _say("done"),
        ]
    )


def _result_of(messages: tuple[Message, ...], call_id: str) -> ToolResult | None:
    found = [r for m in messages for r in m.tool_results if r.call_id == call_id]
    return found[-1] if found else None


# -- busy: shorter than the bound -------------------------------------------------------


@pytest.mark.anyio
async def test_busy_a_locked_store_is_waited_for_while_the_loop_runs_on(
    tmp_path: Path, lock_holder: type[LockHolder]
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")  # the default bound: 30 s
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    recorder = SessionRecorder(store, sid, model="scripted")
    touch_admitted = anyio.Event()
    async with (
        Agent(_script(), bench.tools()).open_run("go", recorder=recorder) as run,
        anyio.create_task_group() as tg,
    ):

        async def consume() -> None:
            async for event in run.events():
                if isinstance(event, ToolUseStarted) and event.call.id == "t":
                    touch_admitted.set()

        tg.start_soon(consume)
        await bench.entered.wait()
        holder = lock_holder(store.path)  # another process locks the store now
        bench.release.set()  # `gate` ends; its result waits for the lock
        await touch_admitted.wait()  # ...while the loop went on to the next call
        await anyio.wait_all_tasks_blocked()
        # The rendezvous: this task and the loop ran while the write waits.
        assert holder.holding
        assert bench.effects == {"gate": 1}  # `touch` waits at its start barrier
        peek = SQLiteSessionStore(store.path, read_only=True)
        assert "t" not in {c.call.id for c in peek.calls(sid)}
        peek.close()
        holder.release()
    assert run.result is not None
    assert run.result.completion_reason is CompletionReason.COMPLETED
    assert bench.effects == {"gate": 1, "touch a": 1}
    assert recorder.failure is None
    assert store.messages(sid) == list(run.result.messages)
    assert {c.call.id: c.state for c in store.calls(sid)} == {
        "g": CallState.FINISHED,
        "t": CallState.FINISHED,
    }
    assert store.find_session(sid).status == "completed"
    store.close()


# -- locked past the bound ------------------------------------------------------------------


@pytest.mark.anyio
async def test_locked_past_the_bound_mid_run_ends_the_run_honestly(
    tmp_path: Path, lock_holder: type[LockHolder]
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db", busy_timeout=1.0)
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    async with Agent(_script(), bench.tools()).open_run("go", recorder=recorder) as run:
        await bench.entered.wait()
        holder = lock_holder(store.path)
        bench.release.set()
        result = await run.wait()
    holder.release()
    assert result.completion_reason is CompletionReason.ERROR
    assert "session store" in result.detail and str(store.path) in result.detail
    assert "locked" in result.detail and "1 s" in result.detail
    assert bench.effects == {"gate": 1}  # nothing started unrecorded
    answer = _result_of(result.messages, "t")
    assert answer is None or answer.text.startswith("Not run")
    assert recorder.failure is not None

    # A successor after the lock is gone: what ran is unknown, nothing is "not run" wrongly.
    store.close()
    successor = SQLiteSessionStore(tmp_path / "s.db")
    assert successor.find_session(sid).status == "crashed"
    plan = prepare_resume(successor, sid)
    assert [r.call.id for r in plan.lost] == [
        "g"
    ]  # it ran; its result was never written
    answered = {r.call_id: r.text for r in plan.history[-1].tool_results}
    assert answered["g"].startswith("Interrupted, outcome unknown")
    assert plan.lease is not None
    plan.lease.release()
    successor.close()


@pytest.mark.anyio
async def test_locked_past_the_bound_at_the_start_runs_nothing(
    tmp_path: Path, lock_holder: type[LockHolder]
) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db", busy_timeout=0.5)
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    holder = lock_holder(store.path)
    recorder = SessionRecorder(store, sid, model="scripted")
    with pytest.raises(StoreError, match="locked") as caught:
        await Agent(_script(), bench.tools()).run("go", recorder=recorder)
    assert str(store.path) in str(caught.value)
    holder.release()
    assert bench.effects == {}
    assert store.runs(sid) == [] and store.find_session(sid).status == "new"
    store.close()


def test_cli_run_on_a_store_locked_past_the_bound_exits_2_naming_it(
    tmp_path: Path, lock_holder: type[LockHolder], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolweave.sessions._sqlite as sqlite_store

    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sqlite_store, "DEFAULT_BUSY_TIMEOUT", 0.5)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "s.db"
    SQLiteSessionStore(db).close()
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"name": "s", "steps": [{"text": "hi"}]}))
    holder = lock_holder(db)
    result = CliRunner().invoke(
        app, ["run", "task", "--scripted", str(steps), "--store", str(db)]
    )
    holder.release()
    assert result.exit_code == 2, result.output
    assert "database is locked" in result.output and str(db) in result.output
    assert "Traceback" not in result.output


# -- a full filesystem ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_full_disk_mid_run_ends_honestly_and_leaves_no_partial_files(
    small_fs: Path,
) -> None:
    store = SQLiteSessionStore(small_fs / "s.db", busy_timeout=1.0)
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench(gate_output=BIG)  # its output is saved to a file (past 20,000)
    results = small_fs / "results"
    state = SessionState(workspace=small_fs, results_dir=results)
    config = AgentConfig(workspace=small_fs)
    agent = Agent(_script(), bench.tools(), config=config, state=state)
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    async with agent.open_run("go", recorder=recorder) as run:
        await bench.entered.wait()
        await recorder.flush()
        ballast = fill(small_fs)  # the disk is full from here on
        bench.release.set()
        result = await run.wait()
    assert result.completion_reason is CompletionReason.ERROR
    assert "session store" in result.detail
    assert "full" in result.detail or "No space left" in result.detail
    assert bench.effects == {"gate": 1}
    gate_answer = _result_of(result.messages, "g")
    assert gate_answer is not None and "<truncated-output>" in gate_answer.text
    saved = results / "tool-results"
    assert not saved.exists() or list(saved.iterdir()) == []  # no partial file
    blobs = store.blobs.root
    assert not blobs.exists() or [p for p in blobs.rglob("*") if p.is_file()] == []
    store.close()

    ballast.unlink()  # space again: a successor resumes
    successor = SQLiteSessionStore(small_fs / "s.db")
    plan = prepare_resume(successor, sid)
    answered = {r.call_id: r.text for r in plan.history[-1].tool_results}
    assert answered["g"].startswith("Interrupted, outcome unknown")  # it ran
    assert not any(text.startswith("Not run") for text in answered.values())
    assert plan.lease is not None
    plan.lease.release()
    successor.close()


@pytest.mark.anyio
async def test_full_disk_at_a_start_barrier_the_call_is_answered_not_run(
    small_fs: Path,
) -> None:
    store = SQLiteSessionStore(small_fs / "s.db", busy_timeout=1.0)
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    bench = Bench()
    bench.release.set()
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    hooks = Hooks()
    ballast: list[Path] = []

    @hooks.pre_tool_use("touch")
    async def fill_the_disk(data: PreToolUseInput) -> None:
        await recorder.flush()  # everything before this call is on disk
        ballast.append(fill(small_fs))  # its start is the next write

    model = ScriptedModel([_use(ToolCall("t", "touch", {"key": "a"})), _say("done")])
    agent = Agent(model, bench.tools(), config=AgentConfig(hooks=hooks))
    result = await agent.run("go", recorder=recorder)
    assert bench.effects == {}  # it never started
    answer = _result_of(result.messages, "t")
    assert answer is not None and answer.synthetic and answer.is_error
    assert answer.text.startswith(
        "Not run: the session store could not record that this call was starting,"
        " so it was never started"
    )
    assert result.completion_reason is CompletionReason.ERROR
    store.close()
    ballast[0].unlink()
    successor = SQLiteSessionStore(small_fs / "s.db")
    plan = prepare_resume(successor, sid)
    assert [r.text for r in plan.history[-1].tool_results] == [
        "Not run: the process running this session stopped before the tool 'touch'"
        " started. It was never started."
    ]  # true: its start was never durable, so it never began
    assert plan.lease is not None
    plan.lease.release()
    successor.close()


def test_full_disk_a_blob_that_cannot_be_written_leaves_nothing(
    small_fs: Path,
) -> None:
    store = SQLiteSessionStore(small_fs / "s.db", blob_threshold=100)
    sid = store.create_session(workspace="/w", model="m", title="t").id
    ballast = fill(small_fs)
    big = Message("user", (ToolResult("c", "z" * 200_000),))
    with pytest.raises(StoreError, match=r"No space left|full"):
        store.append_message(sid, big, run=1)
    blobs = store.blobs.root
    assert not blobs.exists() or [p for p in blobs.rglob("*") if p.is_file()] == []
    ballast.unlink()
    store.append_message(sid, big, run=1)  # the same write, once there is room
    assert store.messages(sid) == [big]
    store.close()


def _limit_file_size(limit: int) -> Any:
    def apply() -> None:
        signal.signal(
            signal.SIGXFSZ, signal.SIG_IGN
        )  # a write past it fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_full_by_rlimit_the_cli_run_ends_with_a_note_and_the_next_call_never_runs(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "project"
    (workspace / ".git").mkdir(parents=True)
    db = tmp_path / "s.db"
    SQLiteSessionStore(db).close()
    limit = (
        db.stat().st_size + 600_000
    )  # room for the run's start, not for a big result
    write = {"path": "big.txt", "content": "x" * 500_000}  # recorded more than once
    marker = {"command": "echo ran > marker.txt"}
    steps = {
        "name": "s",
        "steps": [
            {"tool_calls": [{"id": "w", "name": "write", "input": write}]},
            {"tool_calls": [{"id": "m", "name": "bash", "input": marker}]},
            {"text": "done"},
        ],
    }
    script = tmp_path / "steps.json"
    script.write_text(json.dumps(steps))
    env = {**os.environ, "TOOLWEAVE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [
            *CLI,
            "run",
            "task",
            "--scripted",
            str(script),
            "--store",
            str(db),
            "--json",
            "--permission-mode",
            "bypass",
            "--sandbox",
            "off",
        ],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(limit),
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    notes = [line["message"] for line in lines if line["type"] == "Note"]
    assert done.returncode == 1, (done.stderr, notes)
    assert any("session recording failed" in n and str(db) in n for n in notes), notes
    assert not (workspace / "marker.txt").exists()  # the next call never ran
    finished = [line for line in lines if line["type"] == "RunFinished"]
    assert finished and finished[-1]["reason"] == "error"
    assert "session store" in finished[-1]["detail"]
    blobs = db.with_name(db.name + ".blobs")
    leftovers = list(blobs.rglob(".blob-*")) if blobs.exists() else []
    assert leftovers == []


# -- read-only ------------------------------------------------------------------------------


def _recorded_session(store_dir: Path) -> tuple[Path, str]:
    """A finished session with one tool call, written by a real run."""
    db = store_dir / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(workspace="/w", model="scripted", title="read me").id
    bench = Bench()
    bench.release.set()
    agent = Agent(
        ScriptedModel([_use(ToolCall("t", "touch", {"key": "a"})), _say("the end")]),
        bench.tools(),
    )
    recorder = SessionRecorder(store, sid, model="scripted")
    anyio.run(lambda: agent.run("go", recorder=recorder))
    store.close()
    return db, sid


def test_read_only_store_reads_through_a_read_only_mount(
    read_only_view: tuple[Path, Path],
) -> None:
    writable, view = read_only_view
    _, sid = _recorded_session(writable)
    assert sorted(p.name for p in writable.iterdir()) == ["s.db"]  # closed at rest
    store = SQLiteSessionStore(view / "s.db", read_only=True)
    assert store.find_session(sid).status == "completed"
    assert [m.text for m in store.messages(sid)][-1] == "the end"
    assert [c.state for c in store.calls(sid)] == [CallState.FINISHED]
    with pytest.raises(StoreError, match="read-only"):
        store.create_session(workspace="/w", model="m", title="no")
    store.close()
    with pytest.raises(StoreError):  # opened for writing, it says why it cannot
        SQLiteSessionStore(view / "s.db")


def test_read_only_a_live_writer_and_a_wal_at_rest_read_too(
    read_only_view: tuple[Path, Path],
) -> None:
    writable, view = read_only_view
    db, sid = _recorded_session(writable)
    writer = SQLiteSessionStore(db)  # live: -wal and -shm exist
    writer.append_message(sid, Message("user", "more"), run=1)
    live = SQLiteSessionStore(view / "s.db", read_only=True)
    assert live.messages(sid)[-1].text == "more"
    live.close()
    writer.close()
    # A WAL database at rest without -wal/-shm (closed by another program).
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    assert not db.with_name("s.db-wal").exists()
    rest = SQLiteSessionStore(view / "s.db", read_only=True)
    assert rest.messages(sid)[-1].text == "more"
    rest.close()


def test_read_only_cli_commands_read_a_store_on_a_read_only_mount(
    read_only_view: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writable, view = read_only_view
    _, sid = _recorded_session(writable)
    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "160")
    monkeypatch.chdir(tmp_path)
    db = str(view / "s.db")
    runner = CliRunner()
    listed = runner.invoke(app, ["sessions", "--store", db])
    assert listed.exit_code == 0, listed.output
    assert sid[:12] in listed.output and "completed" in listed.output
    shown = runner.invoke(app, ["show", sid[:8], "--store", db])
    assert shown.exit_code == 0, shown.output
    assert "the end" in shown.output
    page = tmp_path / "t.html"
    drawn = runner.invoke(app, ["timeline", sid[:8], "--store", db, "-o", str(page)])
    assert drawn.exit_code == 0, drawn.output
    assert page.is_file()
    assert sorted(p.name for p in writable.iterdir()) == ["s.db"]  # nothing written


def _as_unprivileged() -> list[str]:
    """A command prefix that runs as an unprivileged user (root ignores permissions)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions would not bind")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_read_only_by_permissions_the_cli_reads_what_it_cannot_write(
    tmp_path: Path,
) -> None:
    prefix = _as_unprivileged()
    base = Path(tempfile.mkdtemp(prefix="toolweave-ro-", dir="/tmp"))  # traversable
    try:
        base.chmod(0o755)
        store_dir = base / "locked-down"
        store_dir.mkdir()
        db, sid = _recorded_session(store_dir)
        db.chmod(0o444)
        store_dir.chmod(0o555)
        home = base / "home"
        home.mkdir(mode=0o777)
        env = {**os.environ, "TOOLWEAVE_HOME": str(home), "COLUMNS": "160"}
        for command in (["sessions"], ["show", sid[:8]]):
            done = subprocess.run(
                [*prefix, *CLI, *command, "--store", str(db)],
                cwd=base,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            assert "completed" in done.stdout or "the end" in done.stdout
        probe = (
            "import sys\n"
            "from toolweave.sessions import SQLiteSessionStore\n"
            "from toolweave._exceptions import StoreError\n"
            "try:\n"
            "    SQLiteSessionStore(sys.argv[1])\n"
            "except StoreError as exc:\n"
            "    print('refused:', exc)\n"
        )
        done = subprocess.run(
            [*prefix, sys.executable, "-c", probe, str(db)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.stdout.startswith("refused:"), (done.stdout, done.stderr)
        assert sorted(p.name for p in store_dir.iterdir()) == ["s.db"]
    finally:
        for path in base.rglob("*"):
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(base)


# -- damage ---------------------------------------------------------------------------------


def _spoil_message(db: Path, sid: str, body: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE messages SET body = ? WHERE session_id = ? AND position = 1",
            (body, sid),
        )


def _spoil_blob(db: Path, sid: str, how: str) -> None:
    (blob,) = db.with_name(db.name + ".blobs").rglob("*.json")
    if how == "missing":
        blob.unlink()
    else:
        data = blob.read_bytes()
        blob.write_bytes(data[: len(data) // 2])


def _spoil_row(db: Path, sql: str, sid: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(sql, (sid,))


DAMAGE = {  # name: (spoil it, what the error says, does `resume` read it)
    "message body not JSON": (
        lambda db, sid: _spoil_message(db, sid, "{not json"),
        "message at position 1",
        True,
    ),
    "message body a JSON list": (
        lambda db, sid: _spoil_message(db, sid, "[1, 2]"),
        "a JSON list where an object belongs",
        True,
    ),
    "message of no known role": (
        lambda db, sid: _spoil_message(db, sid, '{"role": "robot"}'),
        "not a message role",
        True,
    ),
    "content blocks not objects": (
        lambda db, sid: _spoil_message(
            db, sid, '{"role": "assistant", "content": [1]}'
        ),
        "message at position 1",
        True,
    ),
    "half a blob": (lambda db, sid: _spoil_blob(db, sid, "half"), "damaged", True),
    "a missing blob": (
        lambda db, sid: _spoil_blob(db, sid, "missing"),
        "missing",
        True,
    ),
    "a run of no known state": (
        lambda db, sid: _spoil_row(
            db, "UPDATE runs SET state = 'melted' WHERE session_id = ?", sid
        ),
        "run 1",
        True,
    ),
    "a call row not JSON": (
        lambda db, sid: _spoil_row(
            db, "UPDATE calls SET call = 'x' WHERE session_id = ?", sid
        ),
        "tool call 'b'",
        False,  # the transcript ends answered: resume never needs the call rows
    ),
}


def _damageable(tmp_path: Path) -> tuple[Path, str]:
    """A crashed session with a big (blob) result: something of every kind to spoil."""
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db, blob_threshold=200)
    sid = store.create_session(workspace="/w", model="scripted", title="spoil").id
    store.append_message(sid, Message("user", "go"), run=1)
    call = ToolCall("b", "touch", {"key": "a"}, key="1.0")
    store.append_message(sid, Message("assistant", (call,)), run=1)
    store.append_message(sid, Message("user", (ToolResult("b", "y" * 5000),)), run=1)
    store.begin_run(sid, prompt="go", model="scripted", owner=DEAD_OWNER)
    store.put_call(CallRecord(sid, 1, 1, call, state=CallState.FINISHED))
    store.close()
    return db, sid


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_is_a_store_error_naming_the_session_and_row(
    tmp_path: Path, damage: str
) -> None:
    db, sid = _damageable(tmp_path)
    spoil, says, _ = DAMAGE[damage]
    spoil(db, sid)
    store = SQLiteSessionStore(db)

    def read_everything() -> None:
        store.find_session(sid)
        store.messages(sid)
        store.calls(sid)

    with pytest.raises(StoreError) as caught:
        read_everything()
    text = str(caught.value)
    assert sid[:12] in text and says in text, text
    store.close()


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damage_makes_show_and_resume_exit_2_with_one_line(
    tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, sid = _damageable(tmp_path)
    spoil, _, resume_reads = DAMAGE[damage]
    spoil(db, sid)
    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.chdir(tmp_path)
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"name": "s", "steps": [{"text": "hi"}]}))
    commands = [["show", sid[:8], "--store", str(db)]]
    if resume_reads:
        commands.append(
            ["resume", sid[:8], "--store", str(db), "--scripted", str(steps)]
        )
    for args in commands:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), result.output
        assert sid[:12] in lines[0]
    # the refused resume left the session as it was: still free to resume later
    store = SQLiteSessionStore(db)
    assert store.lease(sid) is None
    store.close()


# -- two resumers at once ---------------------------------------------------------------------


def _crashed_session(tmp_path: Path) -> tuple[Path, str]:
    """A session whose first run died while its last call was running (owner gone)."""
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    sid = store.create_session(
        workspace=str(tmp_path / "project"), model="scripted", title="twice?"
    ).id
    call = ToolCall("c1", "bash", {"command": "true"}, key="1.0")
    store.append_message(sid, Message("user", "go"), run=1)
    store.append_message(sid, Message("assistant", (call,)), run=1)
    store.begin_run(
        sid, prompt="go", model="scripted", owner=DEAD_OWNER, write_ahead=True
    )
    store.put_call(CallRecord(sid, 1, 1, call, state=CallState.RUNNING))
    store.close()
    return db, sid


def _resumer(tmp_path: Path, db: Path, sid: str, go: Path) -> subprocess.Popen[str]:
    script = tmp_path / "resume.json"
    steps = {
        "name": "s",
        "steps": [
            {
                "tool_calls": [
                    {
                        "id": "effect",
                        "name": "bash",
                        "input": {"command": "echo once >> effects.txt; cat hold.fifo"},
                    }
                ]
            },
            {"text": "done"},
        ],
    }
    script.write_text(json.dumps(steps))
    command = " ".join(
        [
            'read go < "$1";',
            "exec",
            *(f"'{part}'" for part in CLI),
            "resume",
            sid[:10],
            "--store",
            str(db),
            "--scripted",
            str(script),
            "--json",
            "--permission-mode",
            "bypass",
            "--sandbox",
            "off",
        ]
    )
    return subprocess.Popen(
        ["sh", "-c", command, "sh", str(go)],
        cwd=tmp_path / "project",
        env={**os.environ, "TOOLWEAVE_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_double_resume_two_processes_at_once_run_it_exactly_once(
    tmp_path: Path,
) -> None:
    for round_ in range(2):
        base = tmp_path / f"round{round_}"
        (base / "project" / ".git").mkdir(parents=True)
        project = base / "project"
        os.mkfifo(project / "hold.fifo")
        db, sid = _crashed_session(base)
        gates = [base / "go1.fifo", base / "go2.fifo"]
        for gate in gates:
            os.mkfifo(gate)
        procs = [_resumer(base, db, sid, gate) for gate in gates]
        ended: queue.Queue[int] = queue.Queue()
        for index, proc in enumerate(procs):
            threading.Thread(
                target=lambda i=index, p=proc: (p.wait(), ended.put(i)), daemon=True
            ).start()
        try:
            for gate in gates:  # both start together
                with gate.open("w") as out:
                    out.write("go\n")
            loser = ended.get(timeout=60)  # the one refused ends; the other holds on
            winner = 1 - loser
            _, err = procs[loser].communicate(timeout=30)
            assert procs[loser].returncode == 2, err
            assert "is being run by" in err and "since" in err
            assert ":" in err.split("is being run by", 1)[1]  # host:pid
            with (project / "hold.fifo").open("w") as hold:  # let the winner finish
                hold.write("done\n")
            out, err = procs[winner].communicate(timeout=60)
            assert procs[winner].returncode == 0, err
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert (project / "effects.txt").read_text() == "once\n"  # exactly once
        store = SQLiteSessionStore(db)
        assert store.find_session(sid).status == "completed"
        assert [r.state for r in store.runs(sid)] == [
            RunState.RUNNING,
            RunState.FINISHED,
        ]
        assert store.lease(sid) is None  # released at the end
        store.close()


def test_double_resume_in_the_library_the_second_plan_is_refused(
    tmp_path: Path,
) -> None:
    db, sid = _crashed_session(tmp_path)
    first_store, second_store = SQLiteSessionStore(db), SQLiteSessionStore(db)
    plan = prepare_resume(first_store, sid)
    with pytest.raises(SessionBusyError, match="is being run by") as caught:
        prepare_resume(second_store, sid)
    assert plan.lease is not None and plan.lease.owner in str(caught.value)
    # the refused one changed nothing; the holder's answer is the only one
    assert len(second_store.messages(sid)) == 3
    plan.lease.release()
    first_store.close()
    second_store.close()
