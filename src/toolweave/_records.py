"""Cheaper construction of the frozen records made on every tool call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["slot_setter"]


def slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """The C-level setter of the slot `name` of `cls` (it bypasses a frozen ``__setattr__``).

    For the few frozen, slotted dataclasses made on every tool call: their
    hand-written ``__init__`` sets each field with one of these, which runs
    fewer bytecodes and takes less time than the generated
    ``object.__setattr__(self, name, value)`` per field. The class is declared
    with ``init=False``; everything else dataclasses generate (eq, hash, repr,
    `dataclasses.replace`, pickling, frozenness) is unchanged.
    """
    setter: Callable[[Any, Any], None] = cls.__dict__[name].__set__
    return setter
