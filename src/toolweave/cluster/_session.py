"""One batch session: build its agent from the task's data and run it, emitting events."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TypeAlias

from .._exceptions import ConfigError
from ..events import Event
from ..loop import Agent, AgentConfig, HookSettings, build_shell_hooks
from ..sessions import SessionRecorder
from ..tools import Tool
from ._liveness import Liveness
from ._pump import Emit, pump
from ._ray import started_here
from ._scripted import model_from_spec
from ._storelink import Resumption
from ._tasks import BatchTask
from ._tools import ray_tools
from ._wire import portable_event

__all__ = [
    "SessionSettings",
    "ToolsFactory",
    "build_agent",
    "run_session",
    "serve_session",
]

ToolsFactory: TypeAlias = Callable[[BatchTask], Sequence[Tool]]
"""Builds a session's tools from its task; called where the session runs."""


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """How every session of a batch is built. Sent to Ray workers, so it must pickle.

    A task's own ``model``, ``system``, ``workspace`` and budget win over these.
    """

    _: KW_ONLY
    model: str | None = None
    """Model spec for tasks that name none."""
    system: str | None = None
    """System prompt for tasks that give none."""
    tools: ToolsFactory | str | None = None
    """A factory, ``"coding"`` (the built-in coding tools over the workspace),
    ``"module:function"`` (a factory imported where the session runs), or None."""
    config: AgentConfig | None = None
    """The base config (concurrency, permissions, ...). Must not hold a Dispatcher
    when sessions run on Ray."""
    remote_tools: bool = False
    """Wrap ``placement="ray"`` tools in `RayTool` (set when the batch runs on Ray)."""
    hooks: HookSettings | None = None
    """Shell hooks (`toolweave.toml`'s ``[[hooks.*]]``), run over each session's
    workspace with the task's id as ``session_id``; not with ``config.hooks``."""
    liveness: Liveness | None = None
    """How long remote work may be silent or unschedulable (see `Liveness`)."""


def _coding_tools(task: BatchTask) -> Sequence[Tool]:
    from ..tools.builtin import coding_tools

    return coding_tools(Path(task.workspace or "."))


def _factory(spec: ToolsFactory | str | None) -> ToolsFactory | None:
    if spec is None or callable(spec):
        return spec
    if spec == "coding":
        return _coding_tools
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ConfigError(f"tools must be 'coding' or 'module:function', got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import the tools factory {spec!r}: {exc}") from exc
    if not callable(factory):
        raise ConfigError(f"{spec!r} is not callable")
    result: ToolsFactory = factory
    return result


def build_agent(
    task: BatchTask,
    settings: SessionSettings,
    *,
    results_dir: str | None = None,
    resumption: Resumption | None = None,
    call_scope: str = "",
) -> Agent:
    """The agent for `task`, built in the process that will run it.

    `call_scope` (``<session id>/<run>`` of a session recorded by the driver)
    prefixes its calls' idempotency keys; empty = the run's own (see
    `SessionState.call_scope`).

    `results_dir` is where its large tool results are saved (`run_batch` passes
    the session's folder beside the store); None = the config's, else a
    temporary one removed when the session ends. With `resumption` (a session
    resumed from the store) the agent knows the files the session had read,
    and a scripted model carries on after the turns already in its history.

    Raises:
        ConfigError: no model, an unusable model spec, tools factory or budget,
            or shell hooks beside ``config.hooks``.
    """
    spec = task.model or settings.model
    if spec is None:
        raise ConfigError("no model: give the task a 'model' or the batch a default")
    base = settings.config or AgentConfig()
    workspace = Path(task.workspace) if task.workspace else base.workspace
    saved = Path(results_dir) if results_dir is not None else base.results_dir
    config = dataclasses.replace(
        base, workspace=workspace, results_dir=saved, **task.budget.overrides()
    )
    if settings.hooks is not None:
        config = _with_shell_hooks(config, settings.hooks, task)
    factory = _factory(settings.tools)
    tools: list[Tool] = list(factory(task)) if factory is not None else []
    if settings.remote_tools:
        tools = ray_tools(tools, liveness=settings.liveness)
    turns = resumption.model_turns if resumption is not None else 0
    agent = Agent(
        model_from_spec(spec, turns_done=turns),
        tools,
        system=task.system or settings.system,
        config=config,
    )
    if resumption is not None:
        agent.state.read_files.restore(resumption.read_files)
    agent.state.call_scope = call_scope
    return agent


def _with_shell_hooks(
    config: AgentConfig, hooks: HookSettings, task: BatchTask
) -> AgentConfig:
    cwd = config.workspace or Path.cwd()
    shell = build_shell_hooks(hooks, cwd=cwd, session_id=task.task_id)
    if shell is None:
        return config
    if config.hooks is not None:
        raise ConfigError("give a batch shell hooks or config.hooks, not both")
    return dataclasses.replace(config, hooks=shell)


async def run_session(
    task: BatchTask,
    settings: SessionSettings,
    emit: Callable[[Event], None],
    *,
    results_dir: str | None = None,
    recorder: SessionRecorder | None = None,
    resumption: Resumption | None = None,
    call_scope: str = "",
) -> None:
    """Run `task`'s session to its end, handing every event to `emit` in order.

    Large tool results are saved under `results_dir` (see `build_agent`).
    With `resumption` the run continues the stored session: from its history
    (every call already answered), with its prompt; nothing is run again.
    `recorder` (a local session only) is attached to the run: it records every
    event off the event loop and holds each call until its start is durable.

    The last event is `RunFinished`. Checkpoint: throughout. If `emit`
    raises, the run is interrupted (no more events are emitted), and once it
    ended the error is raised again.

    Raises:
        ConfigError: if the agent cannot be built (nothing was emitted then).
        StoreError: the recorder's session could not be opened for the run.
    """
    agent = build_agent(
        task,
        settings,
        results_dir=results_dir,
        resumption=resumption,
        call_scope=call_scope,
    )
    prompt = task.prompt if resumption is None else resumption.prompt
    history = () if resumption is None else resumption.history
    failure: Exception | None = None
    try:
        async with agent.open_run(prompt, history=history, recorder=recorder) as run:
            # events() is an async generator; close it even when we stop early
            events = run.events()
            async with aclosing(events):
                async for event in events:
                    try:
                        emit(event)
                    except Exception as exc:
                        failure = exc
                        break  # leaving the block interrupts the run and waits for it
    finally:
        await agent.model.aclose()  # the HTTP client of a model built from a spec
        await agent.aclose()  # and a temporary results directory, if it made one
    if failure is not None:
        raise failure


def serve_session(
    task: BatchTask,
    settings: SessionSettings,
    results_dir: str | None = None,
    resumption: Resumption | None = None,
    call_scope: str = "",
) -> Iterator[object]:
    """Body of a session's Ray task: `Started`, its portable events in chunks, the outcome.

    `results_dir` is a path on the worker's machine (the driver's, on one host).
    `resumption`: the stored session it continues (see `run_session`).
    `call_scope`: the driver's store's ``<session id>/<run>`` (idempotency keys).
    """

    async def body(put: Emit) -> None:
        await run_session(
            task,
            settings,
            lambda event: put(portable_event(event)),
            results_dir=results_dir,
            resumption=resumption,
            call_scope=call_scope,
        )

    yield from pump(body, started=started_here())
