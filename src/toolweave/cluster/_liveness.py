"""Liveness of remote work: Ray's verdict on nodes, heartbeats, deadlines, unschedulable tasks.

The driver waits for a remote stream in short polls; between two polls it asks
whether the work can still end by itself. It cannot when its node is dead (Ray
said so), when it sent nothing, not even a heartbeat, for `Liveness.silence`
seconds (a frozen or unreachable node: Ray takes a minute or more to declare
it dead), when its deadline passed, or, before it started, when no live node
has the resources it asks for. Each verdict ends the wait with an error that
says whether the work had started.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Final, final

from .._exceptions import ClusterError

__all__ = [
    "STREAM_OPTIONS",
    "Liveness",
    "NotStartedError",
    "StreamWatch",
    "resource_demand",
]

STREAM_OPTIONS: Final[Mapping[str, Any]] = {
    "num_returns": "streaming",
    "max_retries": 0,
    # One object in flight: the worker's first yield (`Started`) returns only
    # once the driver took it, so the work begins only after the driver knows.
    "_generator_backpressure_num_objects": 1,
}
"""The Ray options of every remote stream (a session, a tool call)."""

_NODES_FRESH_FOR = 0.5  # seconds one reading of ray.nodes() is shared by every stream


def _now() -> float:
    # Real time on the worker threads that wait for Ray (no event loop runs there).
    return time.monotonic()  # noqa: TID251


@dataclass(frozen=True, slots=True)
class Liveness:
    """How long the driver waits for remote work before it declares it lost.

    Sent with the batch's settings to the workers, so it must pickle.
    """

    _: KW_ONLY
    silence: float = 15.0
    """Seconds without any item from a started stream (it sends a heartbeat
    every second) before its node counts as frozen or unreachable."""
    unschedulable: float = 5.0
    """Seconds a not yet started task may wait while no live node has the
    resources it asks for (an autoscaler adding nodes needs more)."""
    poll: float = 0.25
    """Seconds between two looks at a stream that sent nothing."""
    deadline: float | None = None
    """Seconds after its submission by which the stream must have ended; None = none."""
    demand: Mapping[str, float] = field(default_factory=dict)
    """The task's resources in Ray's names (``CPU``, ``GPU``, ``memory``, custom)."""


class NotStartedError(ClusterError):
    """The remote work never began (it could not be scheduled, or died before its start)."""


def resource_demand(options: Mapping[str, Any]) -> dict[str, float]:
    """The resources a task with these Ray ``.options(...)`` needs (a task's default CPU is 1)."""
    demand = {"CPU": float(options.get("num_cpus", 1))}
    if options.get("num_gpus"):
        demand["GPU"] = float(options["num_gpus"])
    if options.get("memory"):
        demand["memory"] = float(options["memory"])
    demand.update({k: float(v) for k, v in (options.get("resources") or {}).items()})
    return {k: v for k, v in demand.items() if v > 0}


@final
class _NodeView:
    """The live nodes and their total resources (``ray.nodes()`` read at most twice a second)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read_at = -_NODES_FRESH_FOR
        self._alive: dict[str, dict[str, float]] = {}

    def alive(self, ray: Any) -> dict[str, dict[str, float]]:
        with self._lock:
            now = _now()
            if now - self._read_at >= _NODES_FRESH_FOR:
                self._alive = {
                    str(n["NodeID"]): dict(n.get("Resources") or {})
                    for n in ray.nodes()
                    if n.get("Alive")
                }
                self._read_at = now
            return self._alive


_NODES = _NodeView()


def _feasible(
    demand: Mapping[str, float], nodes: Mapping[str, Mapping[str, float]]
) -> bool:
    return any(
        all(resources.get(name, 0.0) >= amount for name, amount in demand.items())
        for resources in nodes.values()
    )


@final
class StreamWatch:
    """Takes a remote stream's items one by one, and judges it between them.

    Blocking: use it from one worker thread at a time.
    """

    def __init__(self, ray: Any, generator: Any, liveness: Liveness) -> None:
        self._ray = ray
        self._generator = generator
        self._liveness = liveness
        self.taken = False
        """Whether the first item was taken (from then on the work may have begun)."""
        self.node_id: str | None = None
        """The node the work runs on, once its `Started` arrived."""
        self._submitted = self._heard = _now()
        self._unschedulable_since: float | None = None
        self._stopped = False

    def stop(self) -> None:
        """The driver stopped waiting: a wait still polling (abandoned) ends at its next poll."""
        self._stopped = True

    def ready(self) -> bool:
        """Wait up to one poll for the next item; raise if the work is lost meanwhile."""
        if self._stopped:
            raise ClusterError("the driver stopped waiting for it")
        ready, _ = self._ray.wait([self._generator], timeout=self._liveness.poll)
        if ready:
            return True
        self._judge()
        return False

    def next_ref(self) -> Any:
        """The next item's ref (StopIteration at the end); call after `ready`."""
        ref = next(self._generator)
        self.taken = True
        return ref

    def heard(self, node_id: str | None = None) -> None:
        """An item arrived (from `node_id`, for the stream's `Started`)."""
        self._heard = _now()
        if node_id is not None:
            self.node_id = node_id

    def _judge(self) -> None:
        now = _now()
        live = self._liveness
        if live.deadline is not None and now - self._submitted > live.deadline:
            raise self._lost("its deadline passed")
        nodes = _NODES.alive(self._ray)
        if not self.taken:
            self._judge_unstarted(now, nodes)
            return
        if self.node_id is not None and self.node_id not in nodes:
            raise ClusterError(
                f"Ray declared its node {self.node_id[:12]} dead while it ran;"
                " effects unknown"
            )
        if now - self._heard > live.silence:
            where = f"node {self.node_id[:12]}" if self.node_id else "its node"
            raise ClusterError(
                f"no heartbeat for {live.silence:g} s from {where} (frozen or"
                " unreachable) while it ran; effects unknown"
            )

    def _judge_unstarted(
        self, now: float, nodes: Mapping[str, Mapping[str, float]]
    ) -> None:
        live = self._liveness
        if _feasible(live.demand, nodes):
            self._unschedulable_since = None
            return
        if self._unschedulable_since is None:
            self._unschedulable_since = now
        elif now - self._unschedulable_since > live.unschedulable:
            wanted = ", ".join(f"{k}={v:g}" for k, v in sorted(live.demand.items()))
            raise NotStartedError(
                f"no live node has the resources it needs ({wanted}), so it never"
                " started"
            )

    def _lost(self, why: str) -> ClusterError:
        if not self.taken:
            return NotStartedError(f"{why} before it started")
        return ClusterError(f"{why} while it ran; effects unknown")
