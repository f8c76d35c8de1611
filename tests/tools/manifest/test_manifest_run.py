"""Running manifest tools: real subprocesses and real entry points, through the lifecycle."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import toolweave as tw
from toolweave.execution import ToolRunner
from toolweave.scheduling import Dispatcher, InterruptToken
from toolweave.tools import SessionState
from toolweave.tools.manifest import load_manifest

pytestmark = pytest.mark.anyio

ECHO = """
import json, os, sys
data = json.load(sys.stdin)
print(json.dumps({"argv": sys.argv[1:], "stdin": data, "cwd": os.getcwd()}))
"""
FAIL = """
import sys
print("partial output")
print("it broke", file=sys.stderr)
sys.exit(int(sys.argv[1]))
"""
LOUD = "import sys; sys.stdout.write('x' * 200_000)"
# Starts a grandchild, records both pids, then waits (or exits at once with "quick").
SPAWN = """
import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "60"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
if sys.argv[2] != "quick":
    time.sleep(60)
print("done")
"""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> object:
    """Real clocks on both backends: these tests wait on real subprocesses."""
    return request.param


def _schema(*names: str, **types: str) -> dict[str, Any]:
    props = {n: {"type": types.get(n, "string")} for n in names}
    return {"type": "object", "properties": props, "required": list(names)}


def _load(tmp_path: Path, *tools: dict[str, Any]) -> tw.ToolRegistry:
    manifest = tmp_path / "tools.json"
    manifest.write_text(json.dumps({"tools": list(tools)}))
    return tw.ToolRegistry(load_manifest(manifest))


def _script(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / name).write_text(body)
    return name


async def _run(
    registry: tw.ToolRegistry, tmp_path: Path, name: str, args: Any
) -> tw.ToolResult:
    runner = ToolRunner(registry, state=SessionState(workspace=tmp_path))
    return await runner(tw.ToolCall("c0", name, args))


def _is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie nobody reaped yet has already stopped running
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


async def _wait_gone(*pids: int) -> None:
    with anyio.fail_after(30):
        while not all(_is_gone(pid) for pid in pids):  # noqa: ASYNC110 - other processes
            await anyio.sleep(0.02)


async def test_a_command_gets_json_on_stdin_and_its_stdout_is_the_result(
    tmp_path: Path,
) -> None:
    echo = _script(tmp_path, "echo.py", ECHO)
    (tmp_path / "work").mkdir()
    registry = _load(
        tmp_path,
        {
            "name": "echo",
            "description": "Echo.",
            "inputSchema": _schema("path", "count", count="integer"),
            "command": [sys.executable, f"../{echo}", "--to", "{path}", "-n{count}"],
            "cwd": "work",
            "env": {"EXTRA": "1"},
        },
    )
    result = await _run(registry, tmp_path, "echo", {"path": "a b.txt", "count": 3})
    assert not result.is_error, result
    seen = json.loads(result.text)
    assert seen["argv"] == ["--to", "a b.txt", "-n3"]
    assert seen["stdin"] == {"path": "a b.txt", "count": 3}
    assert seen["cwd"] == str(tmp_path / "work")


async def test_exit_status_decides_success_unless_the_manifest_says_otherwise(
    tmp_path: Path,
) -> None:
    fail = _script(tmp_path, "fail.py", FAIL)
    base = {"description": "Fail.", "inputSchema": _schema("code")}
    registry = _load(
        tmp_path,
        {**base, "name": "strict", "command": [sys.executable, fail, "{code}"]},
        {
            **base,
            "name": "lenient",
            "command": [sys.executable, fail, "{code}"],
            "okExitCodes": [0, 1],
        },
        {**base, "name": "missing", "command": [str(tmp_path / "no-such-program")]},
    )
    strict = await _run(registry, tmp_path, "strict", {"code": "2"})
    assert strict.is_error
    assert "command exited with status 2" in strict.text
    assert "it broke" in strict.text
    assert "partial output" in strict.text
    lenient = await _run(registry, tmp_path, "lenient", {"code": "1"})
    assert not lenient.is_error
    assert lenient.text == "partial output\n"
    missing = await _run(registry, tmp_path, "missing", {"code": "0"})
    assert missing.is_error
    assert "could not be started" in missing.text


async def test_output_beyond_the_limit_is_cut(tmp_path: Path) -> None:
    loud = _script(tmp_path, "loud.py", LOUD)
    registry = _load(
        tmp_path,
        {
            "name": "loud",
            "description": "Loud.",
            "command": [sys.executable, loud],
            "maxOutputBytes": 1000,
        },
    )
    result = await _run(registry, tmp_path, "loud", {})
    assert result.text == "x" * 1000 + "\n[output cut at 1000 bytes]"


def _spawner(tmp_path: Path, **options: Any) -> tw.ToolRegistry:
    spawn = _script(tmp_path, "spawn.py", SPAWN)
    return _load(
        tmp_path,
        {
            "name": "spawn",
            "description": "Spawn.",
            "inputSchema": _schema("pids", "mode"),
            "command": [sys.executable, spawn, "{pids}", "{mode}"],
            **options,
        },
    )


async def _pids(path: Path) -> list[int]:
    """The pids the spawn script wrote (it renames the file into place when done)."""
    file = anyio.Path(path)
    with anyio.fail_after(30):
        while not await file.exists():  # noqa: ASYNC110 - written by another process
            await anyio.sleep(0.02)
    return [int(p) for p in (await file.read_text()).split()]


async def test_a_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The lifecycle cuts off CANCEL tools at their timeout (BLOCK ones run on).
    registry = _spawner(tmp_path, timeout=1, interrupt="cancel")
    pids_file = tmp_path / "pids"
    result = await _run(
        registry, tmp_path, "spawn", {"pids": str(pids_file), "mode": "wait"}
    )
    assert result.is_error
    assert "timed out after 1 s" in result.text, result
    await _wait_gone(*await _pids(pids_file))


async def test_an_interrupt_cancels_a_cancel_tool_and_kills_its_processes(
    tmp_path: Path,
) -> None:
    registry = _spawner(tmp_path, interrupt="cancel", executionMode="parallel")
    pids_file = tmp_path / "pids"
    runner = ToolRunner(registry, state=SessionState(workspace=tmp_path))
    token = InterruptToken()
    results: list[tw.ToolResult] = []
    calls = [
        tw.ToolCall("c0", "spawn", {"pids": str(pids_file), "mode": "wait"}),
        tw.ToolCall("c1", "spawn", {"pids": str(tmp_path / "other"), "mode": "quick"}),
    ]

    async def dispatch() -> None:
        results.extend(
            await Dispatcher().dispatch(calls, registry, runner, interrupt=token)
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(dispatch)
        pids = await _pids(pids_file)
        token.set()
    assert results[0].synthetic
    assert "interrupted" in results[0].text
    await _wait_gone(*pids)


async def test_a_stray_background_child_is_killed_when_the_command_exits(
    tmp_path: Path,
) -> None:
    registry = _spawner(tmp_path)
    pids_file = tmp_path / "pids"
    result = await _run(
        registry, tmp_path, "spawn", {"pids": str(pids_file), "mode": "quick"}
    )
    assert result.text == "done\n"
    await _wait_gone(*await _pids(pids_file))


async def test_entry_points_sync_async_from_a_file_and_failing(tmp_path: Path) -> None:
    (tmp_path / "plugin.py").write_text("def greet(name):\n    return f'hi {name}'\n")
    registry = _load(
        tmp_path,
        {
            "name": "add",
            "description": "Add.",
            "entryPoint": "manifest_probe:add",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a"],
            },
        },
        {
            "name": "shout",
            "description": "Shout.",
            "entryPoint": "manifest_probe:shout",
            "inputSchema": _schema("text"),
        },
        {
            "name": "greet",
            "description": "Greet.",
            "entryPoint": "plugin.py:greet",
            "inputSchema": _schema("name"),
        },
    )
    assert (await _run(registry, tmp_path, "add", {"a": 2})).text == "3"
    assert (await _run(registry, tmp_path, "shout", {"text": "hey"})).text == "HEY"
    failed = await _run(registry, tmp_path, "shout", {"text": "fail"})
    assert failed.is_error
    assert "asked to fail" in failed.text
    assert (await _run(registry, tmp_path, "greet", {"name": "ann"})).text == "hi ann"
    invalid = await _run(registry, tmp_path, "add", {"a": "two"})
    assert invalid.is_error
    assert "a: 'two' is not of type 'integer'" in invalid.text
