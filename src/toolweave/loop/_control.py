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
    behaviour). `expire` ends the run without interrupting its tool calls
    (the wall-clock budget: the runner bounds those itself, see
    `toolweave.execution.RunDeadline`). Event-loop thread only; nothing here
    blocks.
    """

    def __init__(self) -> None:
        self.halt = InterruptToken()
        """Set once the run must stop like an interrupt."""
        self.reason = CompletionReason.INTERRUPTED
        """How the run ends once halted."""
        self.detail = "interrupted by the user"
        """Why, in words."""
        self.queue: list[str] = []
        """Messages sent while a turn runs, oldest first."""
        self._expired = False
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def halted(self) -> bool:
        """True once `stop` or `expire` was called."""
        return self._expired or self.halt.is_set()

    def stop(self, reason: CompletionReason, detail: str) -> None:
        """End the run as soon as it is safe, like an interrupt. Idempotent.

        The first ending wins its reason; a `stop` after `expire` still
        interrupts what runs.
        """
        if not self.halted:
            self.reason, self.detail = reason, detail
        self.halt.set()

    def expire(self, reason: CompletionReason, detail: str) -> None:
        """End the run at its next step; cancel a model call in flight. Idempotent.

        Tool calls are not interrupted: they are bounded by the runner's own
        deadline, which cuts them as at a timeout (BLOCK calls too) and
        answers those not started "not run".
        """
        if self.halted:
            return
        self.reason, self.detail = reason, detail
        self._expired = True
        for scope in self._scopes:
            scope.cancel()

    def finish(self) -> Finish:
        """The ending of a halted run."""
        return Finish(self.reason, detail=self.detail)

    @contextmanager
    def halt_scope(self) -> Iterator[anyio.CancelScope]:
        """A cancel scope that `stop` and `expire` cancel (around a model call)."""
        with anyio.CancelScope() as scope:
            if self._expired:
                scope.cancel()
            self._scopes.add(scope)
            unsubscribe = self.halt.subscribe(scope.cancel)
            try:
                yield scope
            finally:
                unsubscribe()
                self._scopes.discard(scope)

    def take_queue(self) -> list[Text]:
        """The queued messages as text blocks; the queue is emptied."""
        queued, self.queue = self.queue, []
        return [Text(text) for text in queued]
