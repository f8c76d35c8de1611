"""Repeated call ids: a call's preview, file and signals are its own, never another's.

Models repeat ids (two calls with one id in a response; ``call_0`` in every
response of a local server). The runner knows a call by `ToolCall.ref` — the
loop's position key — so a later call is never shown an earlier call's preview,
and no saved output is overwritten.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lifecycle_helpers import Events, make_state, registry_with

from toolweave.events import ToolProgress, ToolRunning
from toolweave.execution import ExecutionConfig, ToolRunner
from toolweave.execution._persist import save_result
from toolweave.messages import ToolCall, ToolResult
from toolweave.tools import Access, Concurrency, ToolContext, tool

pytestmark = pytest.mark.anyio


@tool(concurrency=Concurrency.SAFE, access=lambda a: Access())
async def sized(lines: int, ctx: ToolContext) -> str:
    """Lines of ten characters."""
    ctx.report_progress(f"{lines} lines")
    return "".join(f"{i:09d}\n" for i in range(lines))


def keyed(key: str, lines: int, call_id: str = "call_0") -> ToolCall:
    return ToolCall(call_id, "sized", {"lines": lines}, key=key)


CASES = [
    # (lines of each call, what each call's result must be)
    pytest.param([500, 3], ["persisted", "own"], id="large then small"),
    pytest.param([3, 500], ["own", "persisted"], id="small then large"),
    pytest.param([500, 500], ["persisted", "persisted"], id="both large"),
    pytest.param([500, 3, 500, 3], ["persisted", "own"] * 2, id="alternating"),
]


@pytest.mark.parametrize(("sizes", "expected"), CASES)
async def test_each_call_gets_its_own_result_and_file(
    tmp_path: Path, sizes: list[int], expected: list[str]
) -> None:
    """Same id in every call, one batch or across batches: every result is its own."""
    config = ExecutionConfig(max_result_chars=1000, preview_chars=100)
    runner = ToolRunner(registry_with(sized), state=make_state(tmp_path), config=config)
    calls = [keyed(f"{i + 1}.0", n) for i, n in enumerate(sizes)]  # one per turn
    results = []
    for one in calls:
        (result,) = runner.finish_batch([await runner(one)], [one])
        results.append(result)
    saved = sorted((tmp_path / "session" / "tool-results").glob("*.txt"))
    assert len(saved) == expected.count("persisted")
    texts = {str(path): path.read_text() for path in saved}
    for result, lines, kind in zip(results, sizes, expected, strict=True):
        assert result.call_id == "call_0"
        full = "".join(f"{i:09d}\n" for i in range(lines))
        if kind == "own":
            assert result.text == full
        else:
            assert result.text.startswith("<persisted-output>")
            path = result.text.split("saved to: ")[1].split("\n")[0]
            assert texts[path] == full  # its own file, not overwritten


async def test_duplicates_within_one_batch_keep_their_own_results(
    tmp_path: Path,
) -> None:
    config = ExecutionConfig(max_result_chars=1000, preview_chars=100)
    events = Events()
    runner = ToolRunner(
        registry_with(sized), state=make_state(tmp_path), config=config, on_event=events
    )
    calls = [keyed("1.0", 500), keyed("1.1", 3)]
    results = runner.finish_batch([await runner(c) for c in calls], calls)
    assert results[0].text.startswith("<persisted-output>")
    assert results[1] == ToolResult("call_0", "".join(f"{i:09d}\n" for i in range(3)))
    assert runner.replacement_for("1.0") == results[0].text
    assert runner.replacement_for("1.1") is None
    assert [e.key for e in events.of(ToolRunning)] == ["1.0", "1.1"]
    assert [e.key for e in events.of(ToolProgress)] == ["1.0", "1.1"]
    assert {e.call_id for e in events.of(ToolRunning)} == {"call_0"}


async def test_the_batch_budget_tells_repeated_ids_apart(tmp_path: Path) -> None:
    """Aggregate budget: the first call is persisted; its twin is neither skipped nor replaced."""
    config = ExecutionConfig(batch_result_chars=850, preview_chars=100)
    runner = ToolRunner(registry_with(sized), state=make_state(tmp_path), config=config)
    calls = [keyed("1.0", 80), keyed("1.1", 10)]
    results = runner.finish_batch([await runner(c) for c in calls], calls)
    assert results[0].text.startswith("<persisted-output>")
    assert results[1].text == "".join(f"{i:09d}\n" for i in range(10))
    # A later batch with the same id and position-free refs is not shown the preview.
    later = [keyed("2.0", 10)]
    (again,) = runner.finish_batch([await runner(later[0])], later)
    assert again.text == results[1].text


def test_saved_outputs_never_overwrite_each_other(tmp_path: Path) -> None:
    paths = [save_result(tmp_path, "call_0", f"output {n}") for n in range(4)]
    assert [p.name for p in paths] == [
        "call_0.txt",
        "call_0-2.txt",
        "call_0-3.txt",
        "call_0-4.txt",
    ]
    assert [p.read_text() for p in paths] == [f"output {n}" for n in range(4)]
    assert all(p.parent == tmp_path / "tool-results" for p in paths)
