"""Remote tool execution: a tool declared ``placement="ray"`` runs each call as a Ray task."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, final

from .._exceptions import ClusterError, ConfigError, ToolError
from ..execution import ToolOutput
from ..messages import ToolCall
from ..tools import SessionState, Tool, ToolContext, Warrant, WrappedTool
from ._liveness import STREAM_OPTIONS, Liveness, NotStartedError, resource_demand
from ._pump import Emit, pump
from ._ray import require_ray, started_here
from ._stream import remote_items
from ._wire import Chunk, Outcome, Progress

__all__ = ["RayTool", "ray_task_options", "ray_tools"]

_TOP_LEVEL_RESOURCES = ("num_cpus", "num_gpus", "memory")


def ray_task_options(
    resources: Mapping[str, float], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Ray ``.options(...)`` for one call needing `resources`.

    ``num_cpus``, ``num_gpus`` and ``memory`` become Ray's own options; any
    other name is a custom resource. `extra` (``runtime_env``,
    ``scheduling_strategy``, ...) is passed through and wins.

    Raises:
        ConfigError: for a negative or non-numeric amount.
    """
    options: dict[str, Any] = {}
    custom: dict[str, float] = {}
    for name, value in resources.items():
        amount: object = value
        if (
            isinstance(amount, bool)
            or not isinstance(amount, int | float)
            or amount < 0
        ):
            raise ConfigError(
                f"resource {name!r} must be a number >= 0, got {amount!r}"
            )
        if name in _TOP_LEVEL_RESOURCES:
            options[name] = amount
        else:
            custom[name] = float(amount)
    if custom:
        options["resources"] = custom
    options.update(extra or {})
    return options


@dataclass(frozen=True, slots=True)
class _Sent:
    """What of the driver's context travels with a call (not its session state)."""

    call: ToolCall
    idempotency_key: str
    workspace: Path | None


def _serve_call(tool: Tool, args: dict[str, Any], sent: _Sent) -> Iterator[object]:
    """Body of the Ray task: run `tool` on a fresh event loop, streaming progress.

    The remote context has the driver's call, idempotency key and workspace path.
    """

    async def body(emit: Emit) -> object:
        def progress(message: str, fraction: float | None) -> None:
            emit(Progress(message, fraction))

        ctx = ToolContext(
            sent.call,
            SessionState(workspace=sent.workspace),
            progress=progress,
            idempotency_key=sent.idempotency_key,
        )
        output = await tool.call(args, ctx)
        # A context modifier would act on this worker's copies; it stays here.
        return output.content if isinstance(output, ToolOutput) else output

    yield from pump(body, started=started_here())


@cache
def _remote_call() -> Any:
    """The Ray remote function (created on first use, so Ray is imported lazily)."""
    ray = require_ray()
    return ray.remote(**STREAM_OPTIONS)(_serve_call)


@final
class RayTool(WrappedTool):
    """A local stand-in that runs `inner` as one Ray task per call.

    Every declaration is the inner tool's (name, schema, concurrency, access,
    interrupt, timeout, permissions), so the Dispatcher schedules it exactly as
    it would the local tool: order, caps (a call holds its host slot while its
    Ray task runs, so `max_concurrency` bounds what this process has in
    flight), isolation and interrupts are unchanged. Input validation,
    `validate_input` and permission checks run locally; only `call` is remote.

    The call's Ray task asks for the tool's `resources`; Ray queues it until a
    node has them (the cluster-wide limit). Progress the remote tool reports
    reaches this call's `ToolContext` as it happens. Cancelling the call (an
    interrupt of a CANCEL tool, a timeout, the run being cancelled) cancels the
    Ray task with ``force=True``, which kills its worker process. A remote
    exception fails the call with the same words as a local one; a crashed or
    lost worker fails it with a `ClusterError` message. Tasks are never retried.

    Liveness (`liveness`): a call whose node Ray declares dead, or whose node
    sends no heartbeat for `Liveness.silence` seconds (frozen), fails at once
    with "effects unknown"; a call no live node has the resources for (or
    whose task failed before it began) fails after `Liveness.unschedulable`
    seconds with "Not run", never at the tool's timeout. A call's task streams
    with a backpressure of one object, so the tool begins only after this
    process took the task's first item: "Not run" is exact.

    The remote tool's `ToolContext.idempotency_key` is this call's.

    The remote tool gets a fresh `SessionState` holding only the workspace
    path (which must exist on the node): shared session state, such as the
    read ledger, does not travel, and a returned context modifier is dropped.
    The inner tool is pickled with Ray's cloudpickle for every call.

    Loop affinity: `call` may run on any anyio backend; Ray must be initialised
    in the process (``ray.init`` or `connect_ray`), else the call fails.
    """

    def __init__(
        self,
        inner: Tool,
        *,
        options: Mapping[str, Any] | None = None,
        liveness: Liveness | None = None,
    ) -> None:
        # The remote call awaits its Ray task from anyio, so it can always be
        # cancelled (ray.cancel), whatever the inner tool's own threading.
        super().__init__(inner, placement="ray", runs_in_thread=False)
        self.task_options = ray_task_options(inner.resources, options)
        """The Ray ``.options(...)`` of every call's task."""
        self.liveness = replace(
            liveness or Liveness(), demand=resource_demand(self.task_options)
        )
        """When a call's wait for its task ends with an error (see the class docstring)."""

    @property
    def needs_prepare(self) -> bool:
        """False: a readiness step would run here, not on the worker that calls."""
        return False

    @property
    def warrant(self) -> Warrant:
        """Yours if the inner tool's claim is yours; else UNVOUCHED.

        What toolweave enforces (the declaration audit, the bash tool's probe
        of this machine's sandbox) holds in this process, not on a Ray worker,
        so the call starts only once its response is final.
        """
        inner = self.inner.warrant
        return inner if inner is Warrant.USER else Warrant.UNVOUCHED

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Submit the call as a Ray task and wait for it; see the class docstring.

        Checkpoint: while the task runs (waits happen on a worker thread).

        Raises:
            ToolError: "Not run: ..." when the call's task never began.
            ClusterError: Ray is not initialised, or the task's worker or node failed.
            Exception: whatever the remote tool raised.
        """
        require_ray()
        remote = _remote_call().options(**self.task_options)
        sent = _Sent(ctx.call, ctx.idempotency_key, ctx.state.workspace)
        generator = remote.remote(self.inner, args, sent)
        try:
            return await self._relay(generator, ctx)
        except NotStartedError as exc:
            raise ToolError(f"Not run: the remote call {exc}.") from exc

    async def _relay(self, generator: Any, ctx: ToolContext) -> Any:
        live = self.liveness
        async with aclosing(remote_items(generator, liveness=live)) as items:
            async for item in items:
                if isinstance(item, Outcome):
                    if item.error is not None:
                        raise item.error
                    return item.value
                assert isinstance(item, Chunk)
                for progress in item.items:
                    assert isinstance(progress, Progress)
                    ctx.report_progress(progress.message, progress.fraction)
        raise ClusterError(f"remote tool {self.name!r} ended without a result")


def ray_tools(
    tools: Iterable[Tool],
    *,
    options: Mapping[str, Any] | None = None,
    liveness: Liveness | None = None,
) -> list[Tool]:
    """The same tools, in order, with each ``placement="ray"`` tool wrapped in a `RayTool`.

    Tools placed ``"local"`` (and tools already wrapped) are returned as they
    are. `options` are extra Ray task options for every wrapped tool
    (``runtime_env``, ``scheduling_strategy``, ...); `liveness` how long
    their calls wait for a silent or unschedulable task (see `RayTool`).

    Raises:
        ConfigError: for an unknown placement or an invalid resource amount.
    """
    out: list[Tool] = []
    for tool in tools:
        placement = getattr(tool, "placement", "local")
        if placement not in ("local", "ray"):
            raise ConfigError(
                f"tool {tool.name!r}: placement must be 'local' or 'ray', got {placement!r}"
            )
        wrap = placement == "ray" and not isinstance(tool, RayTool)
        out.append(RayTool(tool, options=options, liveness=liveness) if wrap else tool)
    return out
