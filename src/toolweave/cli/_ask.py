"""Permission asks answered at the terminal: y / n / always."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import final

import anyio
from rich.console import Console
from rich.markup import escape

from ..execution import AskAnswer
from ..messages import ToolCall
from ._turns import call_label

__all__ = ["TerminalAsk", "TerminalLines", "parse_answer"]

_ANSWERS: dict[str, AskAnswer] = {
    "y": "allow",
    "yes": "allow",
    "n": "deny",
    "no": "deny",
    "a": "always",
    "always": "always",
}
_PROMPT = "  Allow? [bold]y[/]es / [bold]n[/]o / [bold]a[/]lways: "


def parse_answer(text: str) -> AskAnswer | None:
    """``y``/``yes`` → allow, ``n``/``no`` → deny, ``a``/``always`` → always; else None."""
    return _ANSWERS.get(text.strip().lower())


@final
class TerminalLines:
    """Lines typed on a terminal, read on the event loop: a wait that can be cancelled.

    The read waits for the descriptor to be readable (`anyio.wait_readable`),
    then takes what is there: no thread blocks in ``read()``, so an interrupt
    ends the wait at once and nothing is left reading stdin, printing a
    prompt, or holding the interpreter at exit. A terminal in its usual
    (canonical) mode delivers whole lines; bytes after a newline are kept for
    the next read.

    Args:
        console: Where the prompt is printed.
        fd: The descriptor to read (stdin's by default).
    """

    def __init__(self, console: Console, fd: int = 0) -> None:
        self._console = console
        self._fd = fd
        self._pending = bytearray()

    async def __call__(self, prompt: str) -> str:
        """Print `prompt` (rich markup) and return the next line; EOFError at end of input."""
        self._console.print(prompt, end="")
        while b"\n" not in self._pending:
            await anyio.wait_readable(self._fd)
            chunk = os.read(self._fd, 4096)
            if not chunk:
                if not self._pending:
                    raise EOFError
                break
            self._pending += chunk
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending = bytearray(rest)
        return line.decode("utf-8", errors="replace")


@final
class TerminalAsk:
    """An ask handler that prompts on the terminal.

    One prompt at a time (the permission stage serializes asks). `pause` is
    entered around it so a live display can step aside. End of input counts
    as deny. Cancelling the ask (an interrupt, a signal) ends it at once:
    the line is read on the event loop (`TerminalLines`), never by a thread
    that would outlive the run.

    Args:
        console: Where to prompt (stderr when stdout carries JSON).
        pause: A context-manager factory entered while the prompt is shown.
        read: ``async (prompt) -> line``, raising EOFError at end of input
            (a `TerminalLines` on stdin by default).
    """

    def __init__(
        self,
        console: Console,
        *,
        pause: Callable[[], AbstractContextManager[object]] | None = None,
        read: Callable[[str], Awaitable[str]] | None = None,
    ) -> None:
        self._console = console
        self._pause = pause or nullcontext
        self._read = read or TerminalLines(console)

    async def __call__(self, call: ToolCall, reason: str) -> AskAnswer:
        """Ask about `call`; a checkpoint (waits for the user)."""
        with self._pause():
            self._console.print(
                f"[bold yellow]Permission needed[/]: {escape(call_label(call, 70))}"
            )
            if reason:
                self._console.print(f"  [dim]{escape(reason)}[/]")
            while True:
                try:
                    text = await self._read(_PROMPT)
                except EOFError:
                    return "deny"
                answer = parse_answer(text)
                if answer is not None:
                    return answer
