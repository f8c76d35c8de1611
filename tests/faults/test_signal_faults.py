"""Fault table: signals and a vanished reader, at each stage of a batch, on a real `toolweave run`.

Rows: SIGINT / SIGTERM / SIGHUP while the model streams, while calls run,
while calls wait for a slot, while a BLOCK call runs (and a second signal
then), while a permission prompt waits (stdin a pseudo-terminal); the JSON
pipe closed by its reader; the live view's terminal gone. Each row checks
what `docs/faults.md` promises: the exit status (128 + the signal, 141 for a
closed output), no process left (bash children and hooks, found by a marker
in /proc), no traceback, a session that reads *interrupted* (or *abandoned*
after a second signal) with every call answered as what happened to it, and a
`resume` that completes and keeps those answers.

Rendezvous through FIFOs the commands open (see `signal_support`); no sleeps.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from signal_support import (
    CLI,
    Fifos,
    cli,
    drain,
    events,
    final,
    read_until,
    script,
    stop,
    tools,
)

from toolweave.sessions import SQLiteSessionStore

pytestmark = pytest.mark.timeout(120)

SIGNALS = [
    pytest.param(signal.SIGINT, id="SIGINT"),
    pytest.param(signal.SIGTERM, id="SIGTERM"),
    pytest.param(signal.SIGHUP, id="SIGHUP"),
]
CANCELLED = "Cancelled: "  # ran and was stopped: effects unknown
NOT_RUN = "Not run: "  # never started


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private TOOLWEAVE_HOME; no real model settings leak in."""
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("TOOLWEAVE_HOME", str(tmp_path / "home"))
    for name in ("TOOLWEAVE_MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty project (a git root)."""
    path = (tmp_path / "project").resolve()
    path.mkdir()
    (path / ".git").mkdir()
    return path


@pytest.fixture
def fifos(workspace: Path) -> Iterator[Fifos]:
    """The row's FIFOs; whatever a failed row left running is killed after it."""
    pipes = Fifos(workspace)
    yield pipes
    pipes.release()
    pipes.kill_survivors()


def _run_args(steps: Path, db: Path, *extra: str) -> list[str]:
    return ["run", "task", "--scripted", str(steps), "--store", str(db), *extra]


def _stopped(
    db: Path, fifos: Fifos, *, status: str = "interrupted"
) -> tuple[str, dict[str, str]]:
    """The one session's id and its first batch's answers; asserts nothing survived."""
    assert fifos.survivors_after() == []
    store = SQLiteSessionStore(db)
    try:
        (info,) = store.list_sessions()
        assert info.status == status, info
        messages = store.messages(info.id)
        answers = {
            r.call_id: r.text for m in messages for r in m.tool_results
        }  # one batch per row
        return info.id, answers
    finally:
        store.close()


def _resume_keeps_the_answers(
    tmp_path: Path, workspace: Path, db: Path, session: str, answers: dict[str, str]
) -> None:
    """`resume` completes; every answer the stopped run gave is still the model's to see."""
    steps = script(tmp_path / "resume.json", final("resumed"))
    done = subprocess.run(
        [
            *CLI,
            *("resume", session, "--scripted", str(steps), "--json"),
            *("--store", str(db), "--permission-mode", "bypass"),
        ],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    store = SQLiteSessionStore(db)
    try:
        info = store.find_session(session)
        assert info.status == "completed", info
        messages = store.messages(session)
        seen = {r.call_id: r.text for m in messages for r in m.tool_results}
        for call_id, text in answers.items():
            if text:  # answered by the stopped run: unchanged
                assert seen[call_id] == text
        assert messages[-1].text == "resumed"
    finally:
        store.close()


def _no_traceback(path: Path) -> None:
    text = path.read_text(errors="replace")
    assert "Traceback" not in text and "Exception ignored" not in text, text


# -- while the model streams ---------------------------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_while_the_model_streams(
    tmp_path: Path, workspace: Path, fifos: Fifos, signum: int
) -> None:
    steps = script(
        tmp_path / "s.json",
        tools(
            ("c1", "bash", {"command": f"cat {fifos.name('c1')}"}),
            text="Let me look at this first, then run something.",
            text_chunk_chars=5,
            chunk_delay=60,  # the stream stalls after its first piece
        ),
        final("never reached"),
    )
    db, err = tmp_path / "s.db", tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = cli([*_run_args(steps, db), "--json"], workspace, stderr=stderr.fileno())
    try:
        for event in events(proc):
            if event["type"] == "TextDelta":
                proc.send_signal(signum)
            assert event["type"] != "ToolUseStarted"
        assert proc.wait(timeout=60) == 128 + signum
    finally:
        stop(proc)
    _no_traceback(err)
    session, answers = _stopped(db, fifos)
    assert answers == {}  # the call was never in a finished response
    _resume_keeps_the_answers(tmp_path, workspace, db, session, answers)


# -- while calls run; while calls wait for a slot --------------------------------------


@pytest.mark.parametrize("signum", SIGNALS)
@pytest.mark.parametrize(
    ("cap", "calls", "running"),
    [
        pytest.param(None, 3, 3, id="calls-running"),
        pytest.param(2, 4, 2, id="calls-waiting-for-a-slot"),
    ],
)
def test_a_signal_mid_batch_kills_every_process_group(
    tmp_path: Path,
    workspace: Path,
    fifos: Fifos,
    signum: int,
    cap: int | None,
    calls: int,
    running: int,
) -> None:
    if cap is not None:
        (workspace / "toolweave.toml").write_text(
            f"[concurrency]\nmax_concurrency = {cap}\n"
        )
    ids = [f"c{i}" for i in range(1, calls + 1)]
    steps = script(
        tmp_path / "s.json",
        tools(*[(i, "bash", {"command": f"cat {fifos.name(i)}"}) for i in ids]),
        final("never reached"),
    )
    db, err = tmp_path / "s.db", tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = cli(
            [*_run_args(steps, db, "--permission-mode", "bypass"), "--json"],
            workspace,
            stderr=stderr.fileno(),
        )
    try:
        stream = events(proc)
        started = []
        for event in stream:
            if event["type"] == "ToolUseStarted":
                started.append(event["call"]["id"])
                if len(started) == running:
                    break
        for call_id in ids[:running]:
            fifos.hold(call_id)  # each command is in its read: certainly running
        assert len(fifos.survivors()) >= running
        proc.send_signal(signum)
        for _ in stream:
            pass
        assert proc.wait(timeout=60) == 128 + signum
    finally:
        stop(proc)
    assert started == ids[:running]
    _no_traceback(err)
    session, answers = _stopped(db, fifos)
    assert list(answers) == ids
    for call_id in ids[:running]:
        assert answers[call_id].startswith(CANCELLED), answers[call_id]
    for call_id in ids[running:]:
        assert answers[call_id].startswith(NOT_RUN), answers[call_id]
    _resume_keeps_the_answers(tmp_path, workspace, db, session, answers)


# -- while a BLOCK call runs: it runs on; a second signal quits at once -------------


def _block_row(
    tmp_path: Path, workspace: Path, fifos: Fifos
) -> tuple[Path, Path, list[str]]:
    """`read` (BLOCK) held in its PreToolUse hook, beside a running `bash` (CANCEL)."""
    (workspace / "notes.txt").write_text("the notes\n")
    (workspace / "toolweave.toml").write_text(
        '[[hooks.PreToolUse]]\nmatcher = "read"\n'
        f'command = "cat {fifos.name("hook")} > /dev/null"\n'
    )
    steps = script(
        tmp_path / "s.json",
        tools(
            ("r", "read", {"path": "notes.txt"}),
            ("b", "bash", {"command": f"cat {fifos.name('b')}"}),
        ),
        final("never reached"),
    )
    db = tmp_path / "s.db"
    return steps, db, [*_run_args(steps, db, "--permission-mode", "bypass"), "--json"]


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_while_a_block_call_runs_lets_it_finish(
    tmp_path: Path, workspace: Path, fifos: Fifos, signum: int
) -> None:
    _, db, args = _block_row(tmp_path, workspace, fifos)
    err = tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = cli(args, workspace, stderr=stderr.fileno())
    try:
        stream = events(proc)
        for event in stream:
            if event["type"] == "ToolUseStarted" and event["call"]["id"] == "b":
                break
        fifos.hold("hook")  # the hook of the BLOCK call runs
        fifos.hold("b")  # the CANCEL call runs
        proc.send_signal(signum)
        for event in stream:
            if event["type"] == "Note":  # the interrupt was taken
                assert "Interrupting" in str(event["message"])
                fifos.release("hook")  # the BLOCK call may now finish
            assert event["type"] != "IterationStarted" or event.get("iteration") == 1
        assert proc.wait(timeout=60) == 128 + signum
    finally:
        stop(proc)
    _no_traceback(err)
    session, answers = _stopped(db, fifos)
    assert answers["r"].endswith("the notes")  # BLOCK: it ran to its end
    assert answers["b"].startswith(CANCELLED)
    _resume_keeps_the_answers(tmp_path, workspace, db, session, answers)


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_second_signal_quits_at_once_and_still_kills_the_children(
    tmp_path: Path, workspace: Path, fifos: Fifos, signum: int
) -> None:
    _, db, args = _block_row(tmp_path, workspace, fifos)
    err = tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = cli(args, workspace, stderr=stderr.fileno())
    try:
        stream = events(proc)
        for event in stream:
            if event["type"] == "ToolUseStarted" and event["call"]["id"] == "b":
                break
        fifos.hold("hook")
        fifos.hold("b")
        proc.send_signal(signum)
        for event in stream:
            if event["type"] == "Note":
                proc.send_signal(signum)  # again, while the BLOCK call still waits
            assert event["type"] != "RunFinished"
        assert proc.wait(timeout=60) == 128 + signum
    finally:
        stop(proc)
    _no_traceback(err)
    session, _ = _stopped(db, fifos, status="abandoned")  # the hook died with it
    store = SQLiteSessionStore(db)
    try:
        from toolweave.sessions import prepare_resume

        plan = prepare_resume(store, session)
        assert plan.lease is not None  # the quit process's lease was free to take
        plan.lease.release()  # no run follows here; the CLI's resume below takes it
        # The hook was killed before `read` started; `bash` was running.
        assert [r.call.id for r in plan.skipped] == ["r"]
        assert [r.call.id for r in plan.lost] == ["b"]
    finally:
        store.close()
    _resume_keeps_the_answers(tmp_path, workspace, db, session, {})


# -- while a permission prompt waits (stdin a terminal) ----------------------------


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_at_the_permission_prompt_ends_the_run_at_once(
    tmp_path: Path, workspace: Path, fifos: Fifos, signum: int
) -> None:
    steps = script(
        tmp_path / "s.json",
        tools(
            ("w1", "write", {"path": "one.txt", "content": "1"}),
            ("w2", "write", {"path": "two.txt", "content": "2"}),
        ),
        final("never reached"),
    )
    db = tmp_path / "s.db"
    controller, terminal = pty.openpty()
    try:
        proc = cli(
            [*_run_args(steps, db), "--json"],
            workspace,
            stdin=terminal,
            stderr=terminal,
        )
        os.close(terminal)
        terminal = -1
        try:
            shown = read_until(controller, b"Allow?")
            proc.send_signal(signum)
            for _ in events(proc):
                pass
            assert proc.wait(timeout=30) == 128 + signum
        finally:
            stop(proc)
        shown += drain(controller)
    finally:
        os.close(controller)
        if terminal != -1:
            os.close(terminal)
    text = shown.decode(errors="replace")
    assert text.count("Allow?") == 1, text  # no stray prompt after the signal
    assert "Traceback" not in text, text
    assert not (workspace / "one.txt").exists() and not (workspace / "two.txt").exists()
    session, answers = _stopped(db, fifos)
    assert list(answers) == ["w1", "w2"]
    for call_id in ("w1", "w2"):  # never started: not run, not "effects unknown"
        assert answers[call_id].startswith(NOT_RUN), answers[call_id]
        assert "never started" in answers[call_id]
    store = SQLiteSessionStore(db)
    try:
        results = store.messages(session)[2].tool_results
        assert all(r.synthetic and r.is_error for r in results)
    finally:
        store.close()
    _resume_keeps_the_answers(tmp_path, workspace, db, session, answers)


# -- the reader goes away -----------------------------------------------------------


def test_the_json_pipe_closed_by_its_reader_ends_the_run_quietly(
    tmp_path: Path, workspace: Path, fifos: Fifos
) -> None:
    """`toolweave run --json | head -1`: the run is interrupted, resumable, exit 141."""
    steps = script(
        tmp_path / "s.json",
        tools(
            ("c1", "bash", {"command": f"cat {fifos.name('c1')}"}),
            ("c2", "bash", {"command": f"cat {fifos.name('c2')}"}),
        ),
        final("never reached"),
    )
    db, err = tmp_path / "s.db", tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = cli(
            [*_run_args(steps, db, "--permission-mode", "bypass"), "--json"],
            workspace,
            stderr=stderr.fileno(),
        )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # what `head -1` reads
        assert '"Session"' in first
        fifos.hold("c1")
        fifos.hold("c2")  # both commands run, and print nothing meanwhile
        proc.stdout.close()  # the reader goes away
        assert proc.wait(timeout=60) == 141
    finally:
        stop(proc)
    _no_traceback(err)
    session, answers = _stopped(db, fifos)
    assert answers["c1"].startswith(CANCELLED) and answers["c2"].startswith(CANCELLED)
    _resume_keeps_the_answers(tmp_path, workspace, db, session, answers)


@pytest.mark.parametrize(
    "hangup", [False, True], ids=["terminal-closed", "with-SIGHUP"]
)
def test_the_live_views_terminal_gone_ends_the_run_quietly(
    tmp_path: Path, workspace: Path, fifos: Fifos, hangup: bool
) -> None:
    """The live view's stdout is a terminal that goes away (EIO on the next write)."""
    steps = script(
        tmp_path / "s.json",
        tools(("c1", "bash", {"command": f"cat {fifos.name('c1')}"})),
        final("never reached"),
    )
    db, err = tmp_path / "s.db", tmp_path / "err.txt"
    controller, terminal = pty.openpty()
    try:
        with err.open("w") as stderr:
            proc = subprocess.Popen(
                [*CLI, *_run_args(steps, db, "--permission-mode", "bypass")],
                cwd=workspace,
                stdin=subprocess.DEVNULL,
                stdout=terminal,
                stderr=stderr.fileno(),
            )
        os.close(terminal)
        terminal = -1
        try:
            read_until(controller, b"toolweave")  # the header: the view is up
            fifos.hold("c1")
            os.close(controller)  # the terminal goes away
            controller = -1
            if hangup:
                proc.send_signal(signal.SIGHUP)
            assert proc.wait(timeout=60) == (128 + signal.SIGHUP if hangup else 141)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    finally:
        for fd in (controller, terminal):
            if fd != -1:
                os.close(fd)
    _no_traceback(err)
    session, answers = _stopped(db, fifos)
    assert answers["c1"].startswith(CANCELLED)
    _resume_keeps_the_answers(tmp_path, workspace, db, session, answers)


# -- before the run: the CLI starting up (an MCP server that never answers) ----------


@pytest.mark.parametrize("signum", SIGNALS)
def test_a_signal_while_the_cli_starts_exits_cleanly(
    tmp_path: Path, workspace: Path, fifos: Fifos, signum: int
) -> None:
    (workspace / "toolweave.toml").write_text(
        f'[mcp_servers.slow]\ncommand = "cat"\nargs = ["{fifos.name("server")}"]\n'
    )
    steps = script(tmp_path / "s.json", final("never reached"))
    db, err = tmp_path / "s.db", tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = cli([*_run_args(steps, db), "--json"], workspace, stderr=stderr.fileno())
    try:
        fifos.hold("server")  # the "server" started; its handshake never comes
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == 128 + signum
    finally:
        stop(proc)
    _no_traceback(err)
    assert fifos.survivors_after() == []  # the server was stopped with the CLI
    store = SQLiteSessionStore(db)
    try:
        (info,) = store.list_sessions()
        assert info.status == "new" and store.messages(info.id) == []  # nothing ran
    finally:
        store.close()
