"""ContextFeed: a run's context, assembled at its start and refreshed before later calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import final

from ..events import Event
from ..events import Warning as WarningEvent
from ..messages import Message, Text
from ._context import ContextAssembler, ContextProvider, ContextRequest

__all__ = ["ContextFeed"]


@final
class ContextFeed:
    """Turns a run's context providers into its system prompt and reminder messages.

    A provider that fails is reported as a `Warning` event (see
    `ContextAssembler` for when) and never fails the run. Loop task only.
    """

    def __init__(
        self,
        providers: Sequence[ContextProvider],
        *,
        workspace: Path | None,
        prompt: str,
        emit: Callable[[Event], None],
    ) -> None:
        self._assembler = ContextAssembler(providers)
        self._request = ContextRequest(workspace=workspace, prompt=prompt)
        self._emit = emit

    async def start(self, system: str | None) -> tuple[str | None, Message]:
        """Run every provider; return the system prompt and the first user message.

        SYSTEM blocks are folded into `system`; the first message holds the
        reminder of refreshed blocks (if any), then the prompt.
        """
        assembled = await self._assembler.assemble(self._request)
        self._warn(assembled.skipped)
        if assembled.system:
            system = f"{system}\n\n{assembled.system}" if system else assembled.system
        prompt = self._request.prompt
        if assembled.reminder:
            return system, Message("user", (Text(assembled.reminder), Text(prompt)))
        return system, Message("user", prompt)

    async def refresh(self) -> Message | None:
        """Re-run refreshed providers: one ``<system-reminder>`` message of what changed.

        None when nothing changed since it was last sent (the prompt stays
        byte-identical, so the provider's prompt cache keeps hitting).
        """
        assembled = await self._assembler.refresh(self._request)
        self._warn(assembled.skipped)
        return Message("user", assembled.reminder) if assembled.reminder else None

    def forget(self) -> None:
        """The transcript was rewritten: the next refresh sends every refreshed block."""
        self._assembler.forget()

    def _warn(self, skipped: Sequence[str]) -> None:
        for line in skipped:
            self._emit(WarningEvent(line))
