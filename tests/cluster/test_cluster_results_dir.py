"""Every batch session saves large tool output in its own folder (issue 13 item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_support import BIG_OUTPUT, dump_steps, dump_tools, task_line

from toolweave.cluster import parse_tasks, run_batch
from toolweave.events import Event, ToolResultReady
from toolweave.sessions import SQLiteSessionStore, results_dir_beside

pytestmark = pytest.mark.anyio

_MARK = "Full output saved to: "


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Real clocks: tools run on worker threads and write files."""
    return str(request.param)


def _saved_paths(events: list[tuple[str, Event]]) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    for session_id, event in events:
        if isinstance(event, ToolResultReady):
            content = event.result.content
            assert isinstance(content, str) and _MARK in content, content
            paths[session_id] = Path(content.split(_MARK, 1)[1].split()[0])
    return paths


async def test_sessions_save_beside_the_store_one_folder_each(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    events: list[tuple[str, Event]] = []
    tasks = parse_tasks([task_line(t, dump_steps(t)) for t in ("a", "b")])
    await run_batch(
        tasks,
        output=tmp_path / "out.jsonl",
        tools=dump_tools,
        store=store,
        sink=lambda sid, event: events.append((sid, event)),
    )
    paths = _saved_paths(events)
    assert len(paths) == 2
    for session_id, path in paths.items():
        assert path.is_relative_to(results_dir_beside(store.path, session_id))
        assert path.read_text() == BIG_OUTPUT
    store.close()


async def test_without_a_store_sessions_save_beside_the_output(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    tasks = parse_tasks([task_line("only", dump_steps("only"))])
    await run_batch(tasks, output=output, tools=dump_tools)
    (line,) = output.read_text().splitlines()
    assert json.loads(line)["status"] == "completed"
    (saved,) = (results_dir_beside(output, "only") / "tool-results").iterdir()
    assert saved.read_text() == BIG_OUTPUT
