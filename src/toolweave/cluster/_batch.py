"""run_batch: many agent sessions, locally or on Ray, each result written as it ends."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AsyncExitStack, aclosing
from dataclasses import replace
from functools import cache, partial
from pathlib import Path
from typing import Any, Protocol, final

import anyio
import anyio.to_thread

from .._exceptions import ClusterError, ConfigError, StoreError
from ..events import Event
from ..loop import AgentConfig, HookSettings
from ..sessions import SessionStore, results_dir_beside
from ._journal import BatchJournal
from ._liveness import STREAM_OPTIONS, Liveness, resource_demand
from ._ray import connect_ray, require_ray
from ._records import RecordWriter, SessionRecord, load_records
from ._session import SessionSettings, ToolsFactory, run_session, serve_session
from ._storelink import StoredSession, open_stored_session
from ._stream import remote_items
from ._tally import BatchStatistics, EventSink, SessionTracker, Tally, status_of
from ._tasks import BatchTask, load_tasks
from ._tools import ray_task_options
from ._wire import Chunk, Outcome

__all__ = ["run_batch"]

OnEvent = Callable[[Event], None]


class _Backend(Protocol):
    placement: str

    async def run(
        self,
        task: BatchTask,
        on_event: OnEvent,
        results_dir: str,
        stored: StoredSession | None,
    ) -> None: ...


@final
class _LocalBackend:
    """Sessions in this process, on this event loop; their recorder attached to the run."""

    placement = "local"

    def __init__(self, settings: SessionSettings) -> None:
        self._settings = settings

    async def run(
        self,
        task: BatchTask,
        on_event: OnEvent,
        results_dir: str,
        stored: StoredSession | None,
    ) -> None:
        await run_session(
            task,
            self._settings,
            on_event,
            results_dir=results_dir,
            recorder=None if stored is None else stored.recorder,
            resumption=None if stored is None else stored.resumption,
        )


@cache
def _remote_session() -> Any:
    ray = require_ray()
    return ray.remote(**STREAM_OPTIONS)(serve_session)


@final
class _RayBackend:
    """Each session is one Ray task streaming its events back to this driver.

    Its wait is judged by `liveness` (see `StreamWatch`): a session whose node
    died or went silent ends within seconds with "effects unknown"; one that
    no live node can host ends "never started"; a task's
    ``max_wall_clock`` plus `Liveness.silence` is its deadline here, in case its
    own loop cannot enforce it (a frozen worker).
    """

    placement = "ray"

    def __init__(
        self,
        settings: SessionSettings,
        options: dict[str, Any],
        threads: int,
        liveness: Liveness | None = None,
    ) -> None:
        # Sent by value with every task, never as one shared `ray.put` object:
        # a copy of a shared object on a frozen node stalled the next session's
        # argument fetch until Ray declared that node dead (~65 s; measured).
        self._settings = settings
        self._remote = _remote_session().options(**options)
        self._threads = anyio.CapacityLimiter(threads)
        self._liveness = replace(
            liveness or Liveness(), demand=resource_demand(options)
        )

    async def run(
        self,
        task: BatchTask,
        on_event: OnEvent,
        results_dir: str,
        stored: StoredSession | None,
    ) -> None:
        """Relay the remote session's events; record them (after the fact) off the loop.

        A remote call's start cannot wait for this driver's store, so its run is
        recorded without the start barrier: a resume answers its unfinished
        calls "outcome unknown". A store that cannot be written stops the session.
        """
        async with AsyncExitStack() as stack:
            if stored is not None:
                await stack.enter_async_context(stored.recording())
            try:
                await self._relay(task, on_event, results_dir, stored)
            except Exception as exc:
                if stored is not None:
                    stored.abandon(_describe(exc))  # queued: recorded off the loop
                raise
            except BaseException:
                if stored is not None:
                    stored.abandon("the batch was interrupted")
                raise

    async def _relay(
        self,
        task: BatchTask,
        on_event: OnEvent,
        results_dir: str,
        stored: StoredSession | None,
    ) -> None:
        resumption = None if stored is None else stored.resumption
        scope = "" if stored is None else stored.call_scope
        generator = self._remote.remote(
            task, self._settings, results_dir, resumption, scope
        )
        live = self._liveness
        wall = task.budget.max_wall_clock
        if wall is not None:
            live = replace(live, deadline=wall + live.silence)
        streamed = remote_items(generator, limiter=self._threads, liveness=live)
        async with aclosing(streamed) as items:
            async for item in items:
                if isinstance(item, Outcome):
                    if item.error is not None:
                        raise item.error
                    return
                assert isinstance(item, Chunk)
                for event in item.items:
                    if stored is not None:
                        stored.record(event)  # type: ignore[arg-type]
                    on_event(event)  # type: ignore[arg-type]
        raise ClusterError("the session's task ended without an outcome")


def _invalid(task: BatchTask, reason: str) -> SessionRecord:
    return SessionRecord(task.task_id, "invalid", line=task.line, reason=reason)


def _crashed(task: BatchTask, reason: str, placement: str) -> SessionRecord:
    return SessionRecord(
        task.task_id, "crashed", line=task.line, reason=reason, placement=placement
    )


def _concluded(task: BatchTask, stored: StoredSession, placement: str) -> SessionRecord:
    """The record of a session that had ended before its driver wrote the line."""
    run = stored.concluded
    assert run is not None
    status = status_of(run.reason)
    return SessionRecord(
        task.task_id,
        status,
        line=task.line,
        session_id=stored.session_id,
        completion_reason=run.reason.value if run.reason else None,
        output=stored.output,
        usage=run.usage,
        cost=run.cost,
        reason=run.detail
        if status != "failed"
        else run.detail or (run.reason.value if run.reason else ""),
        placement=placement,
        metadata=task.metadata,
    )


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@final
class _BatchRun:
    """Drives the sessions of one `run_batch` call; owns the writer and the totals."""

    def __init__(
        self,
        writer: RecordWriter,
        tally: Tally,
        *,
        settings: SessionSettings,
        store: SessionStore | None,
        journal: BatchJournal,
        reported: Mapping[str, SessionRecord],
        results: Path,
        sink: EventSink | None,
        on_update: Callable[[BatchStatistics], None] | None,
    ) -> None:
        self._results = results
        self._journal = journal
        self._reported = reported
        self._writer = writer
        self.tally = tally
        self._settings = settings
        self._store = store
        self._sink = sink
        self._on_update = on_update

    def changed(self) -> None:
        if self._on_update is not None:
            self._on_update(self.tally.snapshot())

    def finish(self, record: SessionRecord) -> None:
        self._writer.write(record)
        self.tally.count(record)
        self.changed()

    async def drive(
        self, tasks: list[BatchTask], backend: _Backend, max_sessions: int
    ) -> None:
        """Run `tasks`, at most `max_sessions` at once, starting them in task order."""
        limiter = anyio.CapacityLimiter(max_sessions)
        async with anyio.create_task_group() as tg:
            for task in tasks:
                if task.error is not None:
                    self.finish(_invalid(task, task.error))
                    continue
                token = object()
                await limiter.acquire_on_behalf_of(token)  # in task order (STYLE E1)
                self.tally.running += 1
                tg.start_soon(self._one, task, backend, limiter, token)

    async def _tracker(self, task: BatchTask, placement: str) -> SessionTracker:
        """A tracker for `task`, its stored session created off the loop (StoreError if not)."""
        stored = None
        if self._store is not None:
            spec = task.model or self._settings.model
            stored = await anyio.to_thread.run_sync(
                partial(
                    open_stored_session,
                    self._store,
                    task,
                    spec,
                    self._journal,
                    reported=task.task_id in self._reported,
                )
            )
        return SessionTracker(
            task,
            placement=placement,
            tally=self.tally,
            sink=self._sink,
            changed=self.changed,
            stored=stored,
        )

    async def _session(self, task: BatchTask, backend: _Backend) -> SessionRecord:
        """Run one session; its record, whatever happened (cancellation propagates)."""
        try:
            tracker = await self._tracker(task, backend.placement)
        except StoreError as exc:
            return _crashed(task, str(exc), backend.placement)
        self.changed()
        if tracker.stored is not None and tracker.stored.concluded is not None:
            return _concluded(task, tracker.stored, backend.placement)
        results_dir = results_dir_beside(
            self._results, tracker.session_id or task.task_id
        )
        try:
            await backend.run(task, tracker.on_event, str(results_dir), tracker.stored)
        except Exception as exc:  # the session's fault: record it, go on
            return await tracker.crashed(_describe(exc))
        except BaseException:  # the batch itself was cancelled: no result line
            await tracker.interrupted()
            raise
        return await tracker.result()

    async def _one(
        self,
        task: BatchTask,
        backend: _Backend,
        limiter: anyio.CapacityLimiter,
        token: object,
    ) -> None:
        try:
            record = await self._session(task, backend)
        finally:
            self.tally.running -= 1
            limiter.release_on_behalf_of(token)
        self.finish(record)


def _results_anchor(store: SessionStore | None, output: Path) -> Path:
    """The file whose ``.results/`` sibling holds the sessions' saved results.

    The store's database file when it has one (a session's folder is then named
    by its stored id, as in the CLI), else the result JSONL (named by task id).
    """
    path = getattr(store, "path", None)
    return path if isinstance(path, Path) else output


def _pending(
    tasks: list[BatchTask], done: Mapping[str, SessionRecord], retry_failed: bool
) -> list[BatchTask]:
    def is_done(task: BatchTask) -> bool:
        record = done.get(task.task_id)
        return record is not None and (record.settled or not retry_failed)

    return [task for task in tasks if not is_done(task)]


async def run_batch(
    tasks: Iterable[BatchTask] | str | Path,
    *,
    output: str | Path,
    model: str | None = None,
    system: str | None = None,
    tools: ToolsFactory | str | None = None,
    config: AgentConfig | None = None,
    store: SessionStore | None = None,
    max_sessions: int = 8,
    ray: bool = False,
    ray_address: str | None = None,
    ray_init: Mapping[str, Any] | None = None,
    session_resources: Mapping[str, float] | None = None,
    sink: EventSink | None = None,
    on_update: Callable[[BatchStatistics], None] | None = None,
    retry_failed: bool = False,
    hooks: HookSettings | None = None,
    liveness: Liveness | None = None,
) -> BatchStatistics:
    """Run one agent session per task and append each result to `output` as it ends.

    Tasks whose id already has a line in `output` are skipped (with
    `retry_failed`, only completed ones are), so re-running a batch after a
    crash or an interrupt does only what is left. At most `max_sessions` run at
    once, started in task order. A session that fails, crashes (its worker
    dies) or cannot be built gets a result line saying why; the batch goes on.
    Only this process writes `output` and calls `sink`.

    Locally (the default) sessions share this event loop. With `ray` (or a
    `ray_address`), each session is one Ray task asking for
    `session_resources`, its events streamed back here in order; tools
    declared ``placement="ray"`` run as Ray tasks of their own. Sessions ask
    for no CPU by default (they mostly wait for the model; `max_sessions`
    bounds them): Ray lends a task's CPU back only while its *main* thread
    blocks in ``ray.get``, and a session waits for its remote tools on other
    threads, so sessions holding every CPU would starve their own tools.
    Unless this process is already connected, a private local Ray cluster is
    started for the call (never one ``ray start`` left on the host), or the
    cluster at `ray_address` is joined; `ray_init` goes to ``ray.init``
    (``runtime_env``, ...).

    Args:
        tasks: Tasks, or the path of a JSONL tasks file (see `parse_tasks`).
        output: The result JSONL (created if missing, appended to).
        model: Model spec for tasks that name none.
        system: System prompt for tasks that give none.
        tools: Tools factory of every session (see `SessionSettings.tools`).
        config: Base agent config; each task's budget and workspace override it.
        store: Where every session is recorded, as it runs, by this process
            (``toolweave sessions`` / ``show`` / ``timeline`` read it); the
            result line's ``session_id`` is then the store's id.
        max_sessions: Sessions in flight at once (>= 1).
        ray: Run sessions on Ray.
        ray_address: A Ray cluster to join (implies `ray`).
        ray_init: Extra ``ray.init`` arguments when this call connects.
        session_resources: Ray resources of one session, merged over the
            default ``{"num_cpus": 0}`` (``{"node_b": 1}`` keeps ``num_cpus: 0``).
        sink: Gets ``(session_id, event)`` for every event (a session store).
        on_update: Gets the batch statistics after every change (a progress bar).
        retry_failed: Also re-run tasks whose earlier result was not completed.
        hooks: Shell hooks of every session (``load_hook_settings``), run in its
            workspace (see `SessionSettings.hooks`).
        liveness: On Ray, how long a session or remote call may be silent (a
            frozen node) or unschedulable before it ends with an error (see
            `Liveness`; heartbeats every second, 15 s of silence by default).

    Returns:
        The statistics at the end.

    Raises:
        ConfigError: for `max_sessions` < 1, or a shared Dispatcher on Ray.
        UsageError: if Ray is asked for but not installed.
        OSError: if a file cannot be read or written.
    """
    if max_sessions < 1:
        raise ConfigError(f"max_sessions must be >= 1, got {max_sessions}")
    on_ray = ray or ray_address is not None
    if on_ray and config is not None and config.dispatcher is not None:
        raise ConfigError("a shared Dispatcher cannot travel to Ray workers")
    task_list = load_tasks(tasks) if isinstance(tasks, str | Path) else list(tasks)
    settings = SessionSettings(
        model=model,
        system=system,
        tools=tools,
        config=config,
        remote_tools=on_ray,
        hooks=hooks,
        liveness=liveness,
    )
    with BatchJournal(output) as journal, RecordWriter(output) as writer:
        reported = load_records(output)  # read under the batch's lease
        todo = _pending(task_list, reported, retry_failed)
        tally = Tally(len(task_list), len(task_list) - len(todo))
        run = _BatchRun(
            writer,
            tally,
            settings=settings,
            store=store,
            journal=journal,
            reported=reported,
            results=_results_anchor(store, Path(output)),
            sink=sink,
            on_update=on_update,
        )
        run.changed()
        if not on_ray or not any(t.error is None for t in todo):
            await run.drive(todo, _LocalBackend(settings), max_sessions)
            return run.tally.snapshot()
        async with connect_ray(ray_address, **(ray_init or {})):
            options = ray_task_options({"num_cpus": 0, **(session_resources or {})})
            backend = _RayBackend(settings, options, max_sessions, liveness)
            await run.drive(todo, backend, max_sessions)
    return run.tally.snapshot()
