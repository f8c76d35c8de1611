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
from ._liveness import Liveness, NotStartedError, StreamWatch
from ._ray import import_ray
from ._wire import Chunk, Outcome, Started

__all__ = ["remote_items"]

_END = object()


def _next_item(ray: Any, watch: StreamWatch, silence: float) -> object:
    """Block for the stream's next object and fetch it; `_END` when it ended.

    Raises `NotStartedError` when the work is known never to have begun
    (nothing taken yet, or the first item is Ray's error), else `ClusterError`.
    """
    while not watch.ready():
        pass
    first = not watch.taken
    try:
        ref = watch.next_ref()
    except StopIteration:
        return _END
    try:
        item = ray.get(ref, timeout=silence)
    except ray.exceptions.GetTimeoutError as exc:
        raise ClusterError(
            f"an item of the stream could not be fetched in {silence:g} s (its"
            " node is frozen or unreachable); effects unknown"
        ) from exc
    except ray.exceptions.RayError as exc:
        if first:  # it failed before its `Started`: nothing of the work ran
            raise NotStartedError(f"{_describe(exc)}; it never started") from exc
        raise ClusterError(f"{_describe(exc)}; effects unknown") from exc
    watch.heard(item.node_id if isinstance(item, Started) else None)
    return item


def _cancel(ray: Any, generator: Any) -> None:
    # Already finished, or Ray is gone: nothing is left to stop.
    with contextlib.suppress(Exception):
        ray.cancel(generator, force=True)


async def remote_items(
    generator: Any,
    *,
    limiter: anyio.CapacityLimiter | None = None,
    liveness: Liveness | None = None,
) -> AsyncGenerator[object, None]:
    """Yield every item of a Ray streaming generator (`ObjectRefGenerator`), in order.

    The generator is one that `pump` feeds (`Started`, chunks, then one
    `Outcome`); `Started` and heartbeats (empty chunks) are not yielded. The
    wait is judged by `liveness` (see `StreamWatch`): a dead or silent node, a
    passed deadline, or resources no live node has end it with an error.

    Each wait runs on a worker thread (under `limiter`, or the Dispatcher's
    thread limiter when None), so the event loop never blocks and any anyio
    backend works. Checkpoint: every item. If the iteration is cancelled or
    closed before the stream ended, the Ray task is cancelled with
    ``ray.cancel(generator, force=True)`` before the cancellation propagates.

    Raises:
        NotStartedError: (a `ClusterError`) the work never began.
        ClusterError: if Ray failed to deliver (worker crashed, node dead or
            frozen, deadline passed, task cancelled elsewhere, object lost);
            the message ends "effects unknown".
    """
    ray = import_ray()
    live = liveness or Liveness()
    watch = StreamWatch(ray, generator, live)
    wait = partial(_next_item, ray, watch, live.silence)
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
                if not watch.taken:
                    raise NotStartedError(
                        f"{_describe(exc)}; it never started"
                    ) from exc
                raise ClusterError(f"{_describe(exc)}; effects unknown") from exc
            if item is _END:
                ended = True
                return
            if isinstance(item, Started) or item == Chunk(()):
                continue
            ended = isinstance(item, Outcome)  # the task's last item: nothing to cancel
            yield item
    finally:
        watch.stop()  # an abandoned wait ends at its next poll
        if not ended:
            _cancel(ray, generator)


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    first = str(exc).strip().splitlines()
    return f"{name}: {first[0]}" if first else name
