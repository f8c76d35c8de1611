"""RunStart hooks: run once when a run starts; their context joins the first message."""

from __future__ import annotations

from collections.abc import Callable

from ..events import Event
from ..events import Warning as WarningEvent
from ..execution import Hooks, RunStartInput
from ..messages import Message, Text

__all__ = ["with_run_start_context"]


async def with_run_start_context(
    first: Message,
    hooks: Hooks | None,
    data: RunStartInput,
    emit: Callable[[Event], None],
) -> Message:
    """`first` with the RunStart hooks' context in front, as a ``<system-reminder>``.

    Unchanged when no hook is registered or none adds anything. A hook that
    fails is reported as a `Warning` event and ignored (context is best effort).
    """
    if hooks is None or not hooks.has_run_start_hooks:
        return first
    outcome = await hooks.run_run_start_hooks(data)
    for problem in outcome.problems:
        emit(WarningEvent(problem))
    if not outcome.contexts:
        return first
    context = "\n".join(outcome.contexts)
    reminder = Text(f"<system-reminder>\n{context}\n</system-reminder>")
    return Message(first.role, (reminder, *first.blocks))
