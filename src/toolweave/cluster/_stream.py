"""Driver side of a remote stream: await a Ray generator's items without blocking the loop."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from functools import partial
from typing import Any

import anyio
import anyio.to_thread

from .._exceptions import ClusterError
from ..tools import run_in_worker_thread
from ._ray import import_ray
from ._wire import Outcome

__all__ = ["remote_items"]

_END = object()


def _next_item(ray: Any, generator: Any) -> object:
    """Block for the generator's next object and fetch it; `_END` when it ended."""
    try:
        ref = next(generator)
    except StopIteration:
        return _END
    return ray.get(ref)


def _cancel(ray: Any, generator: Any) -> None:
    # Already finished, or Ray is gone: nothing is left to stop.
    with contextlib.suppress(Exception):
        ray.cancel(generator, force=True)


async def remote_items(
    generator: Any, *, limiter: anyio.CapacityLimiter | None = None
) -> AsyncGenerator[object, None]:
    """Yield every item of a Ray streaming generator (`ObjectRefGenerator`), in order.

    The generator is one that `pump` feeds: chunks, then one `Outcome`.

    Each wait runs on a worker thread (under `limiter`, or the Dispatcher's
    thread limiter when None), so the event loop never blocks and any anyio
    backend works. Checkpoint: every item. If the iteration is cancelled or
    closed before the stream ended, the Ray task is cancelled with
    ``ray.cancel(generator, force=True)`` before the cancellation propagates.

    Raises:
        ClusterError: if Ray failed to deliver (worker crashed, task cancelled
            elsewhere, object lost).
    """
    ray = import_ray()
    wait = partial(_next_item, ray, generator)
    ended = False
    try:
        while True:
            try:
                if limiter is None:
                    item = await run_in_worker_thread(wait, abandon_on_cancel=True)
                else:
                    item = await anyio.to_thread.run_sync(
                        wait, abandon_on_cancel=True, limiter=limiter
                    )
            except ray.exceptions.RayError as exc:
                ended = True
                raise ClusterError(_describe(exc)) from exc
            if item is _END:
                ended = True
                return
            ended = isinstance(item, Outcome)  # the task's last item: nothing to cancel
            yield item
    finally:
        if not ended:
            _cancel(ray, generator)


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    first = str(exc).strip().splitlines()
    return f"{name}: {first[0]}" if first else name
