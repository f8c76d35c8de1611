"""Where a provider model's warnings go: its own handler, the current run, or the log."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..events import Warning as WarningEvent

__all__ = ["WarningHandler", "deliver_warning", "forward_warnings"]

logger = logging.getLogger("toolweave.models")

WarningHandler = Callable[[WarningEvent], None]
"""Receives a `toolweave.events.Warning` when a provider had to work around something."""

_SINK: contextvars.ContextVar[WarningHandler | None] = contextvars.ContextVar(
    "toolweave_model_warnings", default=None
)


@contextmanager
def forward_warnings(handler: WarningHandler) -> Iterator[None]:
    """While inside, provider models also hand their warnings to `handler`.

    The agent loop wraps each model call in it, so a warning such as "this
    server refused to stream with tools" becomes a `Warning` event of the run
    whoever built the model. A model's own ``on_warning`` still gets it too.
    Context-local: concurrent runs each get their own warnings.
    """
    token = _SINK.set(handler)
    try:
        yield
    finally:
        _SINK.reset(token)


def deliver_warning(message: str, own: WarningHandler | None) -> None:
    """Give `message` to the model's `own` handler and the current run; log it if neither."""
    event = WarningEvent(message)
    sink = _SINK.get()
    if own is not None:
        own(event)
    if sink is not None:
        sink(event)
    if own is None and sink is None:
        logger.warning("%s", message)
