"""Lazy access to Ray: import it only when asked, connect, and disconnect what we started."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from functools import partial
from types import ModuleType
from typing import Any

import anyio.to_thread

from .._exceptions import ClusterError, MissingExtraError
from .._extras import missing_extra
from ._wire import Started

__all__ = [
    "LOCAL_CLUSTER",
    "connect_ray",
    "import_ray",
    "require_ray",
    "started_here",
]

LOCAL_CLUSTER = "local"
"""Ray's address for "start a new local cluster, even if one is running here"."""

_CLIENT_PREFIX = "ray://"


def started_here() -> Started:
    """The `Started` item of remote work running in this Ray worker."""
    ray = import_ray()
    return Started(ray.get_runtime_context().get_node_id(), os.getpid())


def import_ray() -> ModuleType:
    """Import and return the `ray` module (``import toolweave`` never does).

    Raises:
        MissingExtraError: (a `UsageError`) if Ray is not installed, naming
            the extra that installs it.
    """
    try:
        import ray
    except ImportError as exc:
        raise missing_extra(
            exc, extra="ray", needs="running sessions or tools on Ray needs Ray"
        ) from exc
    return ray


def require_ray() -> ModuleType:
    """The `ray` module, checking that this process is connected to a cluster.

    Raises:
        MissingExtraError: if Ray is not installed.
        ClusterError: if Ray is not initialised (we never start a cluster by surprise).
    """
    ray = import_ray()
    if not ray.is_initialized():
        raise ClusterError(
            "Ray is not initialised in this process; call ray.init() (or use "
            "toolweave.cluster.connect_ray) before running remote work"
        )
    return ray


def _client_missing(address: str, exc: ValueError) -> MissingExtraError:
    # Ray says so in a ValueError naming `ray[client]` (grpcio is not installed).
    return MissingExtraError(
        f"joining {address} (Ray Client) needs ray[client]: {exc}; pip install"
        " 'toolweave[ray]' (its ray extra includes ray[client])",
        extra="ray",
        module="grpc",
    )


def _init(ray: ModuleType, address: str | None, options: Mapping[str, Any]) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kwargs: dict[str, Any] = {"log_to_driver": False}
    if address is None:
        kwargs["include_dashboard"] = False
    kwargs.update(options)
    try:
        ray.init(address=LOCAL_CLUSTER if address is None else address, **kwargs)
    except ValueError as exc:
        client = address is not None and address.startswith(_CLIENT_PREFIX)
        if client and "ray[client]" in str(exc):
            raise _client_missing(str(address), exc) from exc
        raise


@asynccontextmanager
async def connect_ray(
    address: str | None = None, **init_options: Any
) -> AsyncIterator[ModuleType]:
    """Make sure this process is connected to Ray for the block; yield the module.

    If Ray is already initialised, it is used as it is and left running.
    Otherwise ``ray.init`` runs on a worker thread (it blocks for seconds):
    with `address` None, a **private** local cluster (``address="local"``:
    never a cluster that ``ray start`` recorded on this host, nor
    ``RAY_ADDRESS``), or else the cluster at `address` (``"auto"``,
    ``"host:6379"``, ``"ray://host:10001"``, ...); the block's end disconnects
    (and stops a private cluster). Defaults: usage stats off, no dashboard for
    a local cluster, worker logs not copied to the driver; `init_options`
    override them.

    Raises:
        MissingExtraError: if Ray is not installed, or a ``ray://`` address
            needs Ray Client (``ray[client]``) and it is not installed.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    await anyio.to_thread.run_sync(partial(_init, ray, address, init_options))
    try:
        yield ray
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(ray.shutdown)
