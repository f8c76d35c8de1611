"""What a batch asks of the loop: stop after it, and extra context for the model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import final

__all__ = ["BatchSignals", "CallFailed", "SignalCollector"]


@final
@dataclass(frozen=True, slots=True)
class BatchSignals:
    """What hooks and tools asked for during one batch (`ToolRunner.take_signals`)."""

    stop: bool = False
    """End the run after this batch (a hook's ``prevent_continuation`` or `StopRun`)."""
    reason: str = ""
    """Why, one line per request, in call order."""
    additional_context: tuple[str, ...] = ()
    """Text for the model from hooks, in call order (PreToolUse before PostToolUse)."""


class CallFailed(Exception):
    """Internal: a lifecycle stage ended the call; `message` becomes its error result."""

    def __init__(
        self, message: str, *, warning: str | None = None, synthetic: bool = False
    ) -> None:
        super().__init__(message)
        self.message = message
        """What the model is told."""
        self.synthetic = synthetic
        """The result is toolweave's own answer for a call that never ran."""
        self.warning = warning
        """If set, also reported to listeners as a `Warning` event."""
        self.modifier: Callable[[], object] | None = None
        """The context modifier of a tool that ran before a later stage failed."""


class SignalCollector:
    """Collects stop requests and context per call; ordered by the batch on `take`.

    Used only from the event-loop thread (hooks and stages run there), so it
    needs no lock even when calls of a batch run concurrently.
    """

    def __init__(self) -> None:
        self._contexts: list[tuple[str, str]] = []
        self._stops: list[tuple[str, str]] = []
        self._order: dict[str, int] = {}

    def add_context(self, call_id: str, text: str) -> None:
        """Record context for the model, said about `call_id`."""
        self._contexts.append((call_id, text))

    def add_stop(self, call_id: str, reason: str) -> None:
        """Record that the run should stop after this batch, and why."""
        self._stops.append((call_id, reason))

    def set_order(self, call_ids: Sequence[str]) -> None:
        """The batch's call order, used to sort what `take` returns."""
        self._order = {call_id: index for index, call_id in enumerate(call_ids)}

    def _sorted(self, items: list[tuple[str, str]]) -> tuple[str, ...]:
        last = len(self._order)
        # sorted() is stable: one call's entries keep the order they were said in.
        ordered = sorted(items, key=lambda item: self._order.get(item[0], last))
        return tuple(text for _, text in ordered)

    def keep(self) -> tuple[tuple[str, str, str], ...]:
        """Everything collected, as said, for a batch that suspended; then reset.

        Each entry is ``(kind, call key, text)``, kind ``"context"`` or
        ``"stop"``. A suspension stores them and the resume gives them back
        (`restore`), so the resumed batch ends with exactly what an
        uninterrupted one would have collected (issue 29 item 1).
        """
        kept = tuple(("context", k, t) for k, t in self._contexts) + tuple(
            ("stop", k, t) for k, t in self._stops
        )
        self._contexts, self._stops, self._order = [], [], {}
        return kept

    def restore(self, kept: Sequence[tuple[str, str, str]]) -> None:
        """Collect again what `keep` returned (a resumed batch, before it runs)."""
        for kind, key, text in kept:
            (self._stops if kind == "stop" else self._contexts).append((key, text))

    def take(self) -> BatchSignals:
        """Everything collected since the last `take`, in call order; then reset."""
        stops = self._sorted(self._stops)
        signals = BatchSignals(
            stop=bool(stops),
            reason="\n".join(stops),
            additional_context=self._sorted(self._contexts),
        )
        self._contexts, self._stops, self._order = [], [], {}
        return signals
