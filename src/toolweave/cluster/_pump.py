"""Worker side of a remote stream: run an async function, yield what it emits as it goes."""

from __future__ import annotations

import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeAlias

import anyio

from .._exceptions import ClusterError
from ._wire import Chunk, Outcome, Started, portable_error

__all__ = ["HEARTBEAT_SECONDS", "Emit", "pump"]

HEARTBEAT_SECONDS = 1.0
"""How often an idle remote stream says it is alive (an empty `Chunk`)."""

Emit: TypeAlias = Callable[[object], None]
"""Hands one item to the driver; safe from any thread, never blocks."""

_DONE = object()


def _serve(
    fn: Callable[[Emit], Awaitable[object]],
    items: queue.SimpleQueue[object],
    outcome: list[Outcome],
) -> None:
    try:
        value = anyio.run(fn, items.put)
    except Exception as exc:
        outcome.append(Outcome(error=portable_error(exc)))
    except BaseException as exc:  # SystemExit from a tool: end the stream, say so
        message = f"the remote work stopped with {type(exc).__name__}"
        outcome.append(Outcome(error=ClusterError(message)))
    else:
        outcome.append(Outcome(value=value))
    finally:
        items.put(_DONE)


def pump(
    fn: Callable[[Emit], Awaitable[object]],
    *,
    started: Started | None = None,
    heartbeat: float = HEARTBEAT_SECONDS,
) -> Iterator[Started | Chunk | Outcome]:
    """Run ``fn(emit)`` in a fresh event loop on a thread; yield its items, then its outcome.

    Meant as the body of a Ray streaming-generator task: the generator yields
    `started` first (when given) and only then starts `fn` (so under a
    backpressure of one object, `fn` begins once the driver took it), then a
    `Chunk` of everything emitted since the previous yield (in emission
    order, so a fast producer costs few objects), an empty `Chunk` after every
    `heartbeat` seconds without one (the driver's proof of life), then exactly
    one `Outcome` holding the return value or the exception `fn` raised (never
    raised here). The thread is a daemon: a force-cancelled task dies with its
    process.
    """
    if started is not None:
        yield started
    items: queue.SimpleQueue[object] = queue.SimpleQueue()
    outcome: list[Outcome] = []
    thread = threading.Thread(
        target=_serve, args=(fn, items, outcome), name="toolweave-remote", daemon=True
    )
    thread.start()
    finished = False
    while not finished:
        try:
            batch = [items.get(timeout=heartbeat)]
        except queue.Empty:
            yield Chunk(())
            continue
        while True:
            try:
                batch.append(items.get_nowait())
            except queue.Empty:
                break
        if batch[-1] is _DONE:
            batch.pop()
            finished = True
        if batch:
            yield Chunk(tuple(batch))
    thread.join()
    yield outcome[0]
