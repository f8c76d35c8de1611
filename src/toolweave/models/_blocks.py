"""Numbering of the neutral content blocks a stream produces."""

from __future__ import annotations

from collections.abc import Hashable
from typing import final

__all__ = ["BlockNumbers"]


@final
class BlockNumbers:
    """Our block index for each provider block, in the order blocks are first emitted.

    Providers number blocks their own way (Anthropic by content index, OpenAI
    Chat by tool-call index with text outside it, Responses by item id), and one
    provider block may stand for several of ours (an unpacked
    ``multi_tool_use.parallel`` wrapper). Numbering at first emission keeps the
    model's order, since every provider streams its blocks in order.
    """

    def __init__(self) -> None:
        self._numbers: dict[Hashable, int] = {}
        self._next = 0

    def of(self, key: Hashable) -> int:
        """The number of provider block `key`, allocated on first use."""
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = self._next
            self._next += 1
        return number

    def fresh(self) -> int:
        """A new number no provider block has."""
        number = self._next
        self._next += 1
        return number
