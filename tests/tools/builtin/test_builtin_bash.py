from __future__ import annotations

import os
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from builtin_support import leftovers, run

from toolweave._exceptions import ToolError, ToolInputError, ToolTimeoutError
from toolweave.tools import Access, Concurrency, Interrupt, SessionState
from toolweave.tools.builtin import BashTool, ReadTool
from toolweave.tools.builtin.bash._process import OutputCapture

pytestmark = pytest.mark.anyio


async def test_runs_in_the_root_and_returns_output(
    root: Path, state: SessionState
) -> None:
    (root / "hello.txt").write_text("hi there\n")
    out = await run(
        BashTool(root), {"command": "pwd; cat hello.txt; echo oops >&2"}, state
    )
    assert out == f"{root}\nhi there\noops\n"


async def test_no_output_gets_a_placeholder(root: Path, state: SessionState) -> None:
    assert await run(BashTool(root), {"command": "true"}, state) == "(no output)"


async def test_failure_reports_the_exit_code(root: Path, state: SessionState) -> None:
    with pytest.raises(ToolError, match=r"(?s)^broken\n\[exit code 3\]$"):
        await run(BashTool(root), {"command": "echo broken; exit 3"}, state)


async def test_exit_1_of_grep_is_an_answer_not_a_failure(
    root: Path, state: SessionState
) -> None:
    (root / "a.txt").write_text("abc\n")
    out = await run(BashTool(root), {"command": "grep zzz a.txt"}, state)
    assert out == "[exit code 1]"
    with pytest.raises(ToolError, match="exit code 2"):
        await run(BashTool(root), {"command": "grep zzz missing.txt"}, state)


async def test_timeout_kills_the_whole_group(root: Path, state: SessionState) -> None:
    command = "sleep 303 & echo started; sleep 303"
    with pytest.raises(ToolTimeoutError, match=r"(?s)timed out after 0.5s.*started"):
        await run(BashTool(root), {"command": command, "timeout": 0.5}, state)
    assert not await leftovers("sleep 303")


async def test_background_children_do_not_outlive_the_call(
    root: Path, state: SessionState
) -> None:
    out = await run(BashTool(root), {"command": "sleep 304 & echo $!"}, state)
    assert int(out) > 0
    assert not await leftovers("sleep 304")


async def test_cancel_kills_the_group(root: Path, state: SessionState) -> None:
    fifo = root / "pid.fifo"
    os.mkfifo(fifo)
    command = "sleep 305 & echo $! > pid.fifo; wait"
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, BashTool(root), {"command": command}, state)
        # rendezvous: the read returns once the command has started its child
        assert int(await anyio.to_thread.run_sync(fifo.read_text)) > 0
        tg.cancel_scope.cancel()
    assert not await leftovers("sleep 305")


async def test_huge_output_keeps_head_and_tail(root: Path, state: SessionState) -> None:
    tool = BashTool(root, max_output_bytes=1000)
    out = await run(tool, {"command": "echo FIRST; seq 1 200000; echo LAST"}, state)
    notice, rest = out.split("\n", 1)
    assert notice == (
        "[output cut: the command printed 1,288,906 bytes; "
        "the first 500 and the last 500 are kept]"
    )
    assert rest.startswith("FIRST\n1\n2\n")
    assert rest.rstrip().endswith("199999\n200000\nLAST")
    assert "[1287906 bytes of output omitted]" in rest
    assert len(rest) < 1100


def test_output_capture_counts_what_it_drops() -> None:
    capture = OutputCapture(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"):
        capture.feed(chunk)
    assert capture.total == 26
    assert capture.text() == (
        "[output cut: the command printed 26 bytes; the first 5 and the last 5 "
        "are kept]\nabcde\n\n... [16 bytes of output omitted] ...\n\nvwxyz"
    )
    small = OutputCapture(10)
    small.feed(b"short")
    assert small.text() == "short"


async def test_non_utf8_output_is_replaced(root: Path, state: SessionState) -> None:
    out = await run(BashTool(root), {"command": "printf 'caf\\351\\n'"}, state)
    assert out == "caf\ufffd\n"


async def test_git_runs_without_optional_locks_or_pager(
    root: Path, state: SessionState
) -> None:
    out = await run(
        BashTool(root), {"command": "echo $GIT_OPTIONAL_LOCKS $GIT_PAGER"}, state
    )
    assert out == "0 cat\n"


async def test_changing_a_read_file_adds_a_hint(
    root: Path, state: SessionState
) -> None:
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("two\n")
    await run(ReadTool(root), {"path": "a.txt"}, state)
    await run(ReadTool(root), {"path": "b.txt"}, state)
    out = await run(BashTool(root), {"command": "echo more >> a.txt; echo done"}, state)
    assert out == (
        "done\n\n[note: this command changed files you read earlier: a.txt. "
        "Read them again before editing them.]"
    )
    quiet = await run(BashTool(root), {"command": "cat b.txt"}, state)
    assert quiet == "two\n"


async def test_bad_input(root: Path, state: SessionState) -> None:
    tool = BashTool(root)
    with pytest.raises(ToolInputError):
        tool.parse({"command": ""})
    with pytest.raises(ToolInputError):
        tool.parse({"command": "ls", "timeout": 0})
    with pytest.raises(ToolInputError):
        tool.parse({"command": "ls", "timeout": 10_000})
    with pytest.raises(ToolInputError, match="NUL"):
        await run(tool, {"command": "echo a\x00b"}, state)


def test_declaration(root: Path) -> None:
    tool = BashTool(root)
    assert tool.name == "bash"
    assert tool.interrupt is Interrupt.CANCEL
    assert tool.abort_siblings_on_error
    safe = tool.parse({"command": "git status && grep -rn foo src"})
    assert tool.concurrency_for(safe) is Concurrency.SAFE
    assert tool.access_for(safe) == Access(reads=(f"fs:{root}", "proc:bash"))
    for command in ("sed -i s/a/b/ f", "ls > out", "make", 'ls "', "echo $(rm x)"):
        args = tool.parse({"command": command})
        assert tool.concurrency_for(args) is Concurrency.SEQUENTIAL
        assert tool.access_for(args) is None  # undeclared: a barrier
    assert tool.env["GIT_OPTIONAL_LOCKS"] == "0"
