"""The terminal ask reads its answer on the event loop: a cancelled ask leaves nothing behind.

Through a real pseudo-terminal (the prompt's usual stdin) and a pipe: lines
come whole, typed-ahead lines are kept, end of input is EOFError, and a
cancelled read consumes nothing (no thread stays blocked in ``read()``, so
the next prompt gets the next line and the interpreter is never held).
"""

from __future__ import annotations

import io
import os
import pty
import threading

import anyio
import pytest
from rich.console import Console

from toolweave.cli._ask import TerminalAsk, TerminalLines
from toolweave.messages import ToolCall

pytestmark = pytest.mark.anyio


async def test_lines_from_a_terminal_whole_and_typed_ahead() -> None:
    controller, terminal = pty.openpty()
    try:
        out = io.StringIO()
        lines = TerminalLines(Console(file=out), terminal)
        os.write(controller, b"yes\n")
        assert await lines("first? ") == "yes"
        os.write(controller, b"no\n")
        assert await lines("second? ") == "no"
        assert out.getvalue() == "first? second? "
    finally:
        os.close(terminal)
        os.close(controller)


async def test_a_pipe_in_pieces_typed_ahead_then_end_of_input() -> None:
    read, write = os.pipe()
    try:
        lines = TerminalLines(Console(file=io.StringIO()), read)
        os.write(write, b"a")
        async with anyio.create_task_group() as tg:
            got: list[str] = []

            async def one() -> None:
                got.append(await lines(""))

            tg.start_soon(one)
            await anyio.wait_all_tasks_blocked()
            os.write(write, b"lw\nn\nrest")  # the rest of a line, a whole one, a part
        assert got == ["alw"]
        assert await lines("") == "n"
        os.close(write)
        write = -1
        assert await lines("") == "rest"  # the last line has no newline
        with pytest.raises(EOFError):
            await lines("")
    finally:
        os.close(read)
        if write != -1:
            os.close(write)


async def test_a_cancelled_ask_reads_nothing_and_leaves_no_thread() -> None:
    controller, terminal = pty.openpty()
    try:
        out = io.StringIO()
        ask = TerminalAsk(
            Console(file=out), read=TerminalLines(Console(file=out), terminal)
        )
        with anyio.move_on_after(0.2) as waited:
            await ask(ToolCall("c1", "write", {"path": "x"}), "")
        assert waited.cancelled_caught
        # No thread the interpreter's exit would wait for (none reads stdin).
        assert [t for t in threading.enumerate() if not t.daemon] == [
            threading.main_thread()
        ]
        assert out.getvalue().count("Allow?") == 1
        os.write(controller, b"a\n")  # typed after the cancel: kept for the next ask
        assert await ask(ToolCall("c2", "write", {"path": "y"}), "") == "always"
        assert out.getvalue().count("Allow?") == 2
    finally:
        os.close(terminal)
        os.close(controller)
