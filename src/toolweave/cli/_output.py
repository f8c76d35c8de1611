"""Where a run's events go: a rich live view, or JSON lines for scripts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Protocol, TextIO, final

import anyio
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from ..events import Event, RunFinished
from ..sessions import event_to_json
from ._audit_view import audit_summary
from ._live import render_turn
from ._turns import TurnTracker

__all__ = ["JsonOutput", "LiveOutput", "RunOutput"]

_TICK = 0.1


class RunOutput(Protocol):
    """Shows a run. Every method is called from the event loop's thread."""

    def handle(self, event: Event) -> None:
        """Show one event."""
        ...

    def note(self, text: str) -> None:
        """Show a message from the CLI itself (interrupts, store problems)."""
        ...

    def running(self) -> Any:
        """An async context manager around the run (starts and stops the display)."""
        ...

    def pause(self) -> Any:
        """A context manager during which the terminal is free (permission prompts)."""
        ...


@final
class JsonOutput:
    """Every event as one JSON object per line on `stream` (see `event_to_json`).

    The CLI's own messages are lines of type ``Note``; the first line of a
    run, type ``Session``, names the session.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def line(self, data: Mapping[str, Any]) -> None:
        """Write one JSON line and flush."""
        text = json.dumps(
            dict(data), ensure_ascii=False, separators=(",", ":"), default=repr
        )
        self._stream.write(text + "\n")
        self._stream.flush()

    def handle(self, event: Event) -> None:
        """Print `event` as JSON."""
        self.line(event_to_json(event))

    def note(self, text: str) -> None:
        """Print a ``Note`` line."""
        self.line({"type": "Note", "message": text})

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Nothing to start."""
        yield

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Nothing to pause."""
        yield


@final
class LiveOutput:
    """A live view: the current turn redrawn ten times a second, finished turns printed.

    Finished turns are printed permanently above the live area, so the
    scrollback (or a non-terminal's output) holds every turn in full.
    """

    def __init__(self, console: Console, tracker: TurnTracker) -> None:
        self.console = console
        self.tracker = tracker
        self.status = ""
        self.finished: RunFinished | None = None
        self.audit = "off"
        """The run's declaration-audit mode (for the summary line at its end)."""
        self._printed = 0
        self._now: float | None = None
        self._live = Live(
            console=console,
            auto_refresh=False,
            transient=True,
            get_renderable=self.renderable,
        )

    def renderable(self) -> RenderableType:
        """What the live area shows now: the current turn and the status line."""
        parts: list[RenderableType] = []
        turn = self.tracker.current
        if turn is not None and self._printed < len(self.tracker.turns):
            parts.append(
                render_turn(turn, now=self._now, live=True, width=self.console.width)
            )
        if self.status:
            parts.append(Text(self.status, style="bold yellow"))
        return Group(*parts)

    def _print_finished(self, *, all_turns: bool) -> None:
        turns = self.tracker.turns
        last = len(turns) if all_turns else len(turns) - 1
        while self._printed < last:
            turn = turns[self._printed]
            if turn.number or turn.rows or turn.text:
                self._live.console.print(render_turn(turn, width=self.console.width))
            self._printed += 1

    def handle(self, event: Event) -> None:
        """Fold `event` into the view."""
        self._now = event.at
        self.tracker.handle(event)
        if isinstance(event, RunFinished):
            self.finished = event
            self._print_finished(all_turns=True)
            summary = audit_summary(self.audit, self.tracker.violations)
            if summary is not None:
                style = "bold magenta" if self.tracker.violations else "dim"
                self._live.console.print(Text(summary, style=style))
        else:
            self._print_finished(all_turns=False)

    def note(self, text: str) -> None:
        """Show `text` under the live turn."""
        self.status = text
        self._live.refresh()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start the display and its ticker; on exit print whatever was not printed."""
        with self._live:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._tick)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
            self._print_finished(all_turns=True)
            self.status = ""
            self._live.refresh()

    async def _tick(self) -> None:
        while True:
            self._now = anyio.current_time()
            self._live.refresh()
            await anyio.sleep(_TICK)

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Stop the live display while the terminal is used for a prompt."""
        self._live.stop()
        try:
            yield
        finally:
            self._live.start()
