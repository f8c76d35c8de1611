"""TranscriptResults: what the model will see of a run's tool results, for the read ledger."""

from __future__ import annotations

from typing import final

from ..messages import ToolCall
from ..tools import result_digest
from ._conversation import Conversation

__all__ = ["TranscriptResults"]


@final
class TranscriptResults:
    """One run's transcript as a `toolweave.tools.TranscriptView`.

    Runs on one Agent share its read ledger (what is on disk, for
    read-before-edit) but not their transcripts: a re-read may be answered
    "unchanged since your last read" only if the result that showed the
    lines is in *this* run's conversation, history included (issue 24, item
    10). Looked up afresh on every question, so a compaction that dropped the
    result, or a preview that replaced it, counts at once.

    Thread-safe to call: it reads a snapshot of the conversation (a tool asks
    from its worker thread; the loop appends only between batches).
    """

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation

    def shows(self, length: int, digest: bytes) -> bool:
        """Whether a call and its result text with this `result_digest` are in the run."""
        calls: tuple[ToolCall, ...] = ()
        for message in self._conversation.snapshot():
            if message.role == "assistant":
                calls = message.tool_calls
                continue
            # results answer the calls right before them, one for one, in order
            for call, result in zip(calls, message.tool_results, strict=False):
                text = result.content
                if (
                    isinstance(text, str)
                    and len(text) == length
                    and not result.is_error
                    and result_digest(call, text) == digest
                ):
                    return True
            calls = ()
        return False
