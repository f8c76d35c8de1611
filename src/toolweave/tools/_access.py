"""What a tool declares about itself: concurrency, interrupt behaviour, resource access."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Access", "Concurrency", "Interrupt", "Warrant", "keys_overlap"]


class Concurrency(enum.Enum):
    """May this call overlap other calls?

    A tool is SEQUENTIAL unless it says otherwise: being wrong the other way
    corrupts state, being wrong this way only costs wall-clock time.
    """

    SAFE = "safe"
    SEQUENTIAL = "sequential"


class Interrupt(enum.Enum):
    """What a running call does when the user interrupts the batch.

    CANCEL: stop now; the call gets a synthetic "interrupted" result.
    BLOCK: run to the end; its real result is recorded.

    User interrupts only: a timeout cuts either kind off at its deadline.
    """

    CANCEL = "cancel"
    BLOCK = "block"


class Warrant(enum.Enum):
    """Who vouches that a SAFE call of a tool changes nothing.

    A SAFE claim lets a call overlap others inside a final response whoever
    makes it. Starting a call *before* the response is final (streaming
    overlap) needs more: the response may yet be retried or cut at
    ``max_tokens``, and a call started from it has run all the same. So only a
    claim someone answers for starts early: the user's own, or one toolweave
    enforces (`toolweave.scheduling.starts_early`). Fixed per tool, read from
    `Tool.warrant`.
    """

    USER = "user"
    """You vouch for it: your own code or configuration (``@tool``, a `Tool` you
    build, a framework tool you declared, an MCP server or a manifest you mark
    ``trusted``)."""
    ENFORCED = "enforced"
    """toolweave makes it hold: the built-in readers (``read``, ``glob``, ``grep``,
    ``todo_read``) by their own code, a bash command proven read-only by running
    it in the OS sandbox's read-only mode."""
    AUDITED = "audited"
    """Someone else's claim about code that runs in this process: it holds where
    the declaration audit enforces it (``audit="enforce"``), and is unvouched
    otherwise (a manifest's ``entryPoint`` tool)."""
    UNVOUCHED = "unvouched"
    """Nobody answers for it: a third party's hint (an MCP server's
    ``readOnlyHint``, a manifest command's ``executionMode``, a web server's
    promise that a GET changes nothing), or a judgement nothing enforces (the
    bash classifier with no sandbox backend). Such a call overlaps as declared,
    but only once its response is final."""


_SEPARATORS = ("/", ":")


def keys_overlap(a: str, b: str) -> bool:
    """True if resource keys `a` and `b` name overlapping resources.

    ``*`` covers everything; otherwise a key covers itself and the keys below it,
    where "below" means after a ``/`` or ``:`` boundary: ``fs:/src`` covers
    ``fs:/src/a.py`` but not ``fs:/srcx``; ``fs:`` covers every ``fs:`` key.
    """
    if a == b or a == "*" or b == "*":
        return True
    short, long = (a, b) if len(a) < len(b) else (b, a)
    if not long.startswith(short):
        return False
    return short.endswith(_SEPARATORS) or long[len(short)] in _SEPARATORS


def _any_overlap(xs: tuple[str, ...], ys: tuple[str, ...]) -> bool:
    return any(keys_overlap(x, y) for x in xs for y in ys)


@dataclass(frozen=True, slots=True, init=False)
class Access:
    """The shared resources one call reads and writes, as hierarchical keys.

    Keys look like ``fs:/abs/path``, ``todo:`` or ``db:users``. `Access()` means
    the call touches nothing shared. Two calls conflict when one writes what the
    other reads or writes (see `keys_overlap`).
    """

    reads: tuple[str, ...]
    """Keys the call reads."""
    writes: tuple[str, ...]
    """Keys the call writes."""

    def __init__(self, reads: Iterable[str] = (), writes: Iterable[str] = ()) -> None:
        object.__setattr__(self, "reads", tuple(reads))
        object.__setattr__(self, "writes", tuple(writes))

    @classmethod
    def read_all(cls) -> Access:
        """A read of everything: the fail-closed access of an undeclared SAFE call."""
        return cls(reads=("*",))

    @classmethod
    def barrier(cls) -> Access:
        """A write of everything: the access of an undeclared or unresolvable call."""
        return cls(writes=("*",))

    @property
    def is_barrier(self) -> bool:
        """True if this writes everything (conflicts with any call that touches anything)."""
        return "*" in self.writes

    def conflicts_with(self, other: Access) -> bool:
        """True if running both at once could change what either observes."""
        return (
            _any_overlap(self.writes, other.writes)
            or _any_overlap(self.writes, other.reads)
            or _any_overlap(self.reads, other.writes)
        )
