"""RunControl: how a run is stopped from outside (interrupt, spent wall clock) and steered."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import final

import anyio

from ..events import CompletionReason
from ..messages import Text
from ..scheduling import InterruptToken
from ._steps import Finish

__all__ = ["RunControl"]


@final
class RunControl:
    """The halt signal and the steering queue of one run.

    `stop` sets one InterruptToken shared by the model call (through
    `halt_scope`) and the Dispatcher (which applies each tool's Interrupt
    behaviour). Event-loop thread only; nothing here blocks.
    """

    def __init__(self) -> None:
        self.halt = InterruptToken()
        """Set once the run must stop."""
        self.reason = CompletionReason.INTERRUPTED
        """How the run ends once halted."""
        self.detail = "interrupted by the user"
        """Why, in words."""
        self.queue: list[str] = []
        """Messages sent while a turn runs, oldest first."""

    @property
    def halted(self) -> bool:
        """True once `stop` was called."""
        return self.halt.is_set()

    def stop(self, reason: CompletionReason, detail: str) -> None:
        """End the run as soon as it is safe; the first call wins. Idempotent."""
        if not self.halt.is_set():
            self.reason, self.detail = reason, detail
            self.halt.set()

    def finish(self) -> Finish:
        """The ending of a halted run."""
        return Finish(self.reason, detail=self.detail)

    @contextmanager
    def halt_scope(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope that `stop` cancels (around a model call)."""
        with anyio.CancelScope() as scope:
            unsubscribe = self.halt.subscribe(scope.cancel)
            try:
                yield scope
            finally:
                unsubscribe()

    def take_queue(self) -> list[Text]:
        """The queued messages as text blocks; the queue is emptied."""
        queued, self.queue = self.queue, []
        return [Text(text) for text in queued]
