"""Applying the context modifiers tools return (as in Claude Code)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..messages import ToolResult

__all__ = ["apply_modifiers"]

logger = logging.getLogger("toolweave.scheduling")


def apply_modifiers(results: Iterable[ToolResult]) -> None:
    """Call each result's context modifier, in the order given; log and skip faults."""
    for result in results:
        modifier = result.context_modifier
        if modifier is None:
            continue
        try:
            modifier()
        except Exception:
            logger.exception(
                "context modifier of call %s raised; ignored", result.call_id
            )
