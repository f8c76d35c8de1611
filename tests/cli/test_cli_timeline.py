"""The timeline page: one bar per call, outcomes coloured, checked in headless Chromium."""

from __future__ import annotations

import io
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from browser_support import bars_in, chromium, find_chromium, hex_rgb, png_colours
from rich.console import Console

from toolweave._exceptions import OverloadedError
from toolweave.cli._show import render_transcript
from toolweave.cli._timeline import write_timeline
from toolweave.cli.demo import run_demo
from toolweave.loop import Agent, AgentConfig
from toolweave.messages import ModelResponse, StopReason, Text, ToolCall, Usage
from toolweave.models import RetryPolicy, ScriptedModel, ScriptStep
from toolweave.sessions import (
    CallState,
    SessionRecorder,
    SQLiteSessionStore,
    prepare_resume,
)
from toolweave.tools import Access, Concurrency, Interrupt, tool

DEAD_OWNER = (
    f"{socket.gethostname()}:{2**22 + 4321}"  # above Linux's pid_max: never alive
)
COLOURS = {
    "ok": "#2f9e44",
    "lost": "#f08c00",
    "synthetic": "#adb5bd",
    "model": "#748ffc",
}


async def _crashed_and_resumed(
    store: SQLiteSessionStore, crash_copy: Any, crashed: Path
) -> tuple[SQLiteSessionStore, str]:
    """A session whose first run died mid-batch (lost + skipped calls), then resumed.

    The crash: what the store holds once `c` runs (copied as a killed process
    leaves it, `crash_copy`); the resume runs on that copy, which is returned.
    """
    started = anyio.Event()

    @tool(
        concurrency=Concurrency.SAFE, access=lambda a: Access(reads=[f"k:{a['key']}"])
    )
    async def look(key: str) -> str:
        """Look <at> a key."""
        return f"value of {key}"

    @tool(access=lambda a: Access(writes=[f"k:{a['key']}"]), interrupt=Interrupt.CANCEL)
    async def slow(key: str) -> str:
        """Change a key, forever."""
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    calls = [
        ToolCall("a", "look", {"key": "<script>x</script>"}),
        ToolCall("b", "look", {"key": "y"}),
        ToolCall("c", "slow", {"key": "y"}),
        ToolCall("d", "look", {"key": "y"}),
    ]
    batch = ModelResponse([Text("go"), *calls], StopReason.TOOL_USE, Usage(5, 5))
    sid = store.create_session(
        workspace="/w", model="scripted", title="crash & resume"
    ).id
    recorder = SessionRecorder(store, sid, model="scripted", owner=DEAD_OWNER)
    agent = Agent(ScriptedModel([batch]), [look, slow])

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: agent.run("task", recorder=recorder))
        await started.wait()
        await anyio.wait_all_tasks_blocked()
        await recorder.flush()
        copy = crash_copy(store, crashed)
        tg.cancel_scope.cancel()
    store.close()
    plan = prepare_resume(copy, sid)
    again = SessionRecorder(copy, sid, model="scripted", lease=plan.lease)
    final = ModelResponse([Text("done")], StopReason.END_TURN, Usage(5, 5))
    await Agent(ScriptedModel([final]), [look, slow]).run(
        plan.prompt, history=plan.history, recorder=again
    )
    return copy, sid


def test_the_page_is_self_contained_and_escapes_what_it_shows(
    tmp_path: Path, crash_copy: Any
) -> None:
    store, sid = anyio.run(
        _crashed_and_resumed,
        SQLiteSessionStore(tmp_path / "s.db"),
        crash_copy,
        tmp_path / "crashed.db",
    )
    page, bars = write_timeline(store, sid, tmp_path / "t.html")
    html = page.read_text()
    assert bars == 4 == html.count("data-call-id=")
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # only the page's own inline script
    for needle in ("src=", "href=", "http:", "https:", "@import", "url("):
        assert needle not in html, needle
    outcomes = {bar["data-call-id"]: bar["data-outcome"] for bar in bars_in(html)}
    assert outcomes == {"a": "ok", "b": "ok", "c": "lost", "d": "skipped"}
    assert "Run 1 · iteration 1" in html and "Run 2 · iteration 1" in html
    store.close()


@pytest.mark.browser
def test_headless_chromium_draws_one_bar_per_call(
    tmp_path: Path, crash_copy: Any
) -> None:
    binary = find_chromium()
    if binary is None:
        pytest.skip(
            "Debian's chromium is not installed (CI installs it via .ci/setup-extras)"
        )
    store, crash_sid = anyio.run(
        _crashed_and_resumed,
        SQLiteSessionStore(tmp_path / "crash.db"),
        crash_copy,
        tmp_path / "crashed.db",
    )
    demo = anyio.run(
        lambda: run_demo(Console(file=io.StringIO()), root=tmp_path / "demo")
    )
    demo_store = SQLiteSessionStore(demo.store_path)
    cases = [(store, crash_sid, "crash"), (demo_store, demo.session_id, "demo")]
    for db, sid, name in cases:
        page, _ = write_timeline(db, sid, tmp_path / f"{name}.html")
        records = db.calls(sid)
        keys = {f"{c.run}/{c.iteration}/{c.call.ref}/{c.attempt}" for c in records}
        bars = bars_in(chromium(binary, page, "--dump-dom"))
        assert len(bars) == len(records) > 0
        assert {
            bar["data-key"] for bar in bars
        } == keys  # every call of the session, once
        assert all(float(bar["width"]) >= 3 for bar in bars)
        if name == "crash":
            assert {c.state for c in records} >= {CallState.LOST, CallState.SKIPPED}

        shot = tmp_path / f"{name}.png"
        chromium(binary, page, f"--screenshot={shot}", "--window-size=1200,1000")
        width, height, colours = png_colours(shot)
        assert (width, height) == (1200, 1000)
        wanted = {"ok", "model"} | ({"lost", "synthetic"} if name == "crash" else set())
        for outcome in wanted:
            assert hex_rgb(COLOURS[outcome]) in colours, (
                f"{name}: no {outcome} bar painted"
            )
    demo_store.close()
    store.close()


async def _retried_after_an_early_start(store: SQLiteSessionStore) -> str:
    """A session whose first stream started a read early, then died and was retried."""

    @tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
    async def look(key: str) -> str:
        """Look at a key."""
        return f"value of {key}"

    dying = ScriptStep(
        ModelResponse([ToolCall("dead", "look", {"key": "x"}), Text("x" * 30)]),
        chunk_delay=0.01,
        text_chunk_chars=1,
        fail_after_chunks=20,
        error=OverloadedError("mid-stream"),
    )
    model = ScriptedModel(
        [dying, ModelResponse([Text("done")], StopReason.END_TURN, Usage(1, 1))]
    )
    sid = store.create_session(workspace="/w", model="scripted", title="t").id
    recorder = SessionRecorder(store, sid, model="scripted")
    config = AgentConfig(retry=RetryPolicy(initial_delay=0.0, jitter=0.0))
    async for event in Agent(model, [look], config=config).run_stream("go"):
        recorder.record(event)
    return sid


def test_a_discarded_call_that_ran_says_so(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = anyio.run(_retried_after_an_early_start, store)
    [dead] = store.calls(sid)
    assert dead.state is CallState.DISCARDED and dead.running_at is not None
    page, bars = write_timeline(store, sid, tmp_path / "t.html")
    html = page.read_text()
    assert bars == 1 and "discarded attempt, but it ran" in html
    assert "value of x" in html  # its result, in the bar's tooltip
    store.close()


def test_show_lists_a_discarded_call_that_ran(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    sid = anyio.run(_retried_after_an_early_start, store)
    out = io.StringIO()
    console = Console(file=out, width=200)
    for part in render_transcript(store, sid):
        console.print(part)
    text = out.getvalue()
    assert "ran from a discarded (retried) response, run 1" in text
    assert "value of x" in text
    store.close()
