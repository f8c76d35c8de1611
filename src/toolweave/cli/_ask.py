"""Permission asks answered at the terminal: y / n / always."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import final

import anyio
from rich.console import Console
from rich.markup import escape

from ..execution import AskAnswer
from ..messages import ToolCall
from ._turns import call_label

__all__ = ["TerminalAsk", "parse_answer"]

_ANSWERS: dict[str, AskAnswer] = {
    "y": "allow",
    "yes": "allow",
    "n": "deny",
    "no": "deny",
    "a": "always",
    "always": "always",
}


def parse_answer(text: str) -> AskAnswer | None:
    """``y``/``yes`` → allow, ``n``/``no`` → deny, ``a``/``always`` → always; else None."""
    return _ANSWERS.get(text.strip().lower())


@final
class TerminalAsk:
    """An ask handler that prompts on the terminal.

    The prompt runs in a worker thread (stdin blocks), one at a time (the
    permission stage serializes asks). `pause` is entered around it so a live
    display can step aside. End of input counts as deny.

    Args:
        console: Where to prompt (stderr when stdout carries JSON).
        pause: A context-manager factory entered while the prompt is shown.
        read: The line reader (``console.input`` by default).
    """

    def __init__(
        self,
        console: Console,
        *,
        pause: Callable[[], AbstractContextManager[object]] | None = None,
        read: Callable[[str], str] | None = None,
    ) -> None:
        self._console = console
        self._pause = pause or nullcontext
        self._read = read or partial(console.input, markup=True)

    def _prompt(self, call: ToolCall, reason: str) -> AskAnswer:
        self._console.print(
            f"[bold yellow]Permission needed[/]: {escape(call_label(call, 70))}"
        )
        if reason:
            self._console.print(f"  [dim]{escape(reason)}[/]")
        while True:
            try:
                text = self._read(
                    "  Allow? [bold]y[/]es / [bold]n[/]o / [bold]a[/]lways: "
                )
            except EOFError:
                return "deny"
            answer = parse_answer(text)
            if answer is not None:
                return answer

    async def __call__(self, call: ToolCall, reason: str) -> AskAnswer:
        """Ask about `call`; a checkpoint (waits for the user)."""
        with self._pause():
            return await anyio.to_thread.run_sync(
                self._prompt, call, reason, abandon_on_cancel=True
            )
