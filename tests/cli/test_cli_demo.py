"""`toolweave demo`: the scripted session over a real git workspace, and its summary."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from toolweave.cli._audit_view import stored_violations
from toolweave.cli.demo import render_summary, run_demo
from toolweave.events import CompletionReason
from toolweave.sessions import SQLiteSessionStore

HAS_GIT = shutil.which("git") is not None


@pytest.mark.anyio
async def test_the_demo_really_fixes_the_bug_and_reports_the_numbers(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    console = Console(file=out, width=120)
    result = await run_demo(console, root=tmp_path)
    assert (
        result.finished is not None
        and result.finished.reason is CompletionReason.COMPLETED
    )
    calc = (result.workspace / "src" / "calc.py").read_text()
    assert "len(values)" in calc and "/ 2" not in calc
    text = out.getvalue()
    for expected in (
        "A scripted session",
        "iteration 1",
        "iteration 4",
        "✓ done",
        "faster than serial",
    ):
        assert expected in text, expected
    assert [i for i, _ in result.stats] == [1, 2, 3]
    assert [s.calls for _, s in result.stats] == ([5, 5, 2] if HAS_GIT else [4, 5, 1])

    store = SQLiteSessionStore(result.store_path)
    calls = {c.call.id: c for c in store.calls(result.session_id)}
    # the demo runs with audit="enforce": nothing the built-in tools did was blocked
    assert "declaration audit (enforce): no violations" in text
    assert stored_violations(store, result.session_id) == []
    assert not any(
        "declaration audit" in c.result.text for c in calls.values() if c.result
    )
    unittest_result = calls["t3_unittest"].result
    assert unittest_result is not None and not unittest_result.is_error
    assert "OK" in unittest_result.text  # the fixed code passes its tests

    def ran(call_id: str) -> tuple[float, float]:
        record = calls[call_id]
        assert record.running_at is not None and record.finished_at is not None
        return record.running_at, record.finished_at

    # The edit waits for the read of its file; the read-back waits for the edit.
    assert ran("t2_edit_calc")[0] >= ran("t2_read_calc")[1]
    assert ran("t2_reread_calc")[0] >= ran("t2_edit_calc")[1]
    if HAS_GIT:  # the test run may write anything: it waits for the diff before it
        assert ran("t3_unittest")[0] >= ran("t3_git_diff")[1]
    first = result.stats[0][1]
    assert first.makespan < first.serial  # the survey's reads overlapped
    html = result.timeline.read_text()
    assert html.count("data-call-id=") == len(calls)
    store.close()

    summary = io.StringIO()
    Console(file=summary, width=120).print(render_summary(result.stats))
    assert "lower bound" in summary.getvalue() and "all" in summary.getvalue()


def test_the_readme_command_runs(tmp_path: Path) -> None:
    """The README's first command, as a newcomer runs it (in a private temp dir)."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, "-c", "from toolweave.cli import main; main()", "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for expected in (
        "toolweave demo",
        "What parallel execution bought",
        "timeline.html",
        "toolweave show",
    ):
        assert expected in done.stdout, expected
    (demo_dir,) = tmp_path.glob("toolweave-demo-*")
    assert (demo_dir / "timeline.html").is_file()
    # recorded where `toolweave sessions` looks (the default store), so the
    # commands it suggests need no --store
    home = Path(os.environ["TOOLWEAVE_HOME"])
    assert (home / "sessions.db").is_file() and "--store" not in done.stdout
