"""Declaration mistakes are never silent: where a raising access/concurrency callable is told."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = [
    "report_declaration_error",
    "reporting_declaration_errors",
    "silenced_declaration_errors",
]

DeclarationErrorSink = Callable[[str], None]

_sink: contextvars.ContextVar[DeclarationErrorSink | None] = contextvars.ContextVar(
    "toolweave_declaration_errors", default=None
)


@contextmanager
def reporting_declaration_errors(sink: DeclarationErrorSink) -> Iterator[None]:
    """Within the block (and the tasks and threads it starts), tell `sink` each mistake.

    A tool's ``concurrency=`` or ``access=`` callable that raises, or returns
    something that is not a Concurrency/bool or an Access, still fails closed
    (SEQUENTIAL, a barrier); `sink` gets one line naming the tool and what
    went wrong, once per distinct message within the block. The Agent loop
    wraps each run in this and turns each line into a `Warning` event; use it
    around `Dispatcher.dispatch` when you drive the scheduler yourself. A sink
    that raises is ignored.
    """
    seen: set[str] = set()

    def once(message: str) -> None:
        if message not in seen:
            seen.add(message)
            sink(message)

    token = _sink.set(once)
    try:
        yield
    finally:
        _sink.reset(token)


@contextmanager
def silenced_declaration_errors() -> Iterator[None]:
    """Within the block nobody is told (a second look at a declaration already reported)."""
    token = _sink.set(None)
    try:
        yield
    finally:
        _sink.reset(token)


def report_declaration_error(tool: str, which: str, problem: str) -> None:
    """Tell the current sink (if any) that `tool`'s `which` declaration failed."""
    sink = _sink.get()
    if sink is None:
        return
    try:
        sink(
            f"tool {tool!r}: its {which} declaration failed ({problem});"
            f" the call is treated as {'SEQUENTIAL' if which == 'concurrency' else 'a barrier'}"
        )
    except Exception:  # a listener's fault must not change the schedule
        return
