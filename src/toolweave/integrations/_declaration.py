"""Declaration: what a framework's tool tells toolweave's scheduler about itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

from ..tools import Access, Concurrency, Interrupt
from ..tools._tool import AccessSpec, ConcurrencySpec

__all__ = ["READ_ONLY", "UNDECLARED", "Declaration", "Declarations"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Declaration:
    """The scheduling facts of one framework tool, the same ones `@tw.tool` takes.

    Frameworks' tools carry no such facts, so an integration is given them by
    tool name. A tool with no declaration gets `UNDECLARED`: SEQUENTIAL with
    undeclared access, a barrier under the ``conflict`` policy (fail closed).
    """

    concurrency: ConcurrencySpec = Concurrency.SEQUENTIAL
    """A Concurrency, or a callable of the call's arguments (a dict) returning one or a bool."""
    access: AccessSpec | None = None
    """An Access, or a callable of the arguments returning one; None = undeclared."""
    interrupt: Interrupt = Interrupt.BLOCK
    """On interrupt: CANCEL stops a running call now, BLOCK lets it finish."""
    timeout: float | None = None
    """Seconds before the call gets a timeout error; None = no limit."""


UNDECLARED = Declaration()
"""What an undeclared tool gets: SEQUENTIAL, undeclared access (a barrier)."""

READ_ONLY = Declaration(concurrency=Concurrency.SAFE, access=Access())
"""A tool that touches nothing shared: it overlaps with everything."""

Declarations: TypeAlias = Mapping[str, Declaration]
"""Tool name → its declaration."""
