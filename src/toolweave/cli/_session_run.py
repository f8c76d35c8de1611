"""`toolweave run` and `toolweave resume`: settings → agent → a recorded, displayed run."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
from rich.console import Console
from rich.markup import escape

from .._exceptions import StoreError, UsageError
from ..events import CompletionReason, FileRead
from ..loop import NO_MODEL_REACHED, Agent, build_shell_hooks, check_decisions
from ..messages import Message
from ..models import Model
from ..sessions import (
    SessionInfo,
    SessionLease,
    SessionRecorder,
    SQLiteSessionStore,
    Suspension,
    prepare_resume,
    results_dir_beside,
)
from ..tools import Tool, ToolRegistry
from ..tools.builtin import coding_tools
from ._ask import TerminalAsk
from ._build import (
    agent_config,
    build_model,
    coding_system_prompt,
    describe_access,
    mcp_configs,
    pricer,
    warning_words,
)
from ._drive import DriveResult, drive_run, exit_code
from ._output import JsonOutput, LiveOutput, RunOutput
from ._script_file import load_script
from ._settings import LoadedSettings, load_settings, toolweave_home
from ._signals import StopWatch
from ._turns import TurnTracker

__all__ = [
    "RunOptions",
    "default_store_path",
    "open_store",
    "resume_session",
    "start_session",
    "store_path",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """Command-line options shared by `run` and `resume`."""

    cwd: Path
    model: str | None = None
    base_url: str | None = None
    stream: bool | None = None
    """None: as the settings say (default: stream)."""
    store: str | None = None
    json: bool = False
    permission_mode: str | None = None
    sandbox: str | None = None
    """``--sandbox``: overrides ``[sandbox] mode``."""
    audit: str | None = None
    """None: as the settings say (default: off)."""
    on_ask: str | None = None
    """``--on-ask``: overrides ``[permissions] on_ask`` (deny / suspend)."""
    scripted: Path | None = None
    interactive: bool | None = None
    """None: ask at the terminal only if stdin is one."""

    def overrides(self) -> dict[str, object]:
        """The options that override settings, in the settings' shape."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "stream": self.stream,
            "store": self.store,
            "sandbox": {"mode": self.sandbox},
            "audit": self.audit,
            "permissions": {"on_ask": self.on_ask},
        }


def default_store_path() -> Path:
    """``~/.toolweave/sessions.db`` (``$TOOLWEAVE_HOME`` moves it)."""
    return toolweave_home() / "sessions.db"


def store_path(store: str | None) -> Path:
    """Where the session store named `store` (None = the default one) lives."""
    return Path(store).expanduser() if store else default_store_path()


def open_store(
    store: str | None, *, existing: bool = False, read_only: bool = False
) -> SQLiteSessionStore:
    """The session store at `store`, or the default one.

    With `existing` (commands that read sessions), a named store must already
    exist: a mistyped ``--store`` is an error, not a new empty database. With
    `read_only` (``sessions``, ``show``, ``timeline``) nothing is written: the
    store may lie in a read-only directory or mount.

    Raises:
        UsageError: `existing` (or `read_only`) and no database is at the path.
        StoreError: the database cannot be opened.
    """
    path = store_path(store)
    if not path.is_file() and (read_only or (existing and store)):
        raise UsageError(
            f"no session database at {path}; check --store (or `store` in"
            " toolweave.toml). Without it, the default store is used."
        )
    return SQLiteSessionStore(path, read_only=read_only)


@dataclass(slots=True, kw_only=True)
class _Launch:
    options: RunOptions
    loaded: LoadedSettings
    store: SQLiteSessionStore
    session: SessionInfo
    workspace: Path
    model: Model
    model_spec: str
    prompt: str
    history: Sequence[Message] = ()
    read_files: Sequence[FileRead] = ()
    """What a resumed session had read (restored so read-before-edit knows it)."""
    lease: SessionLease | None = None
    """A resumed session's lease (from `prepare_resume`), held for its run."""
    suspension: Suspension | None = None
    """A suspended session's state, resumed with `decisions`."""
    decisions: Mapping[str, str] = field(default_factory=dict)
    """By call key: allow / deny / always."""


def _model(options: RunOptions, loaded: LoadedSettings) -> tuple[Model, str]:
    if options.scripted is not None:
        return load_script(options.scripted), f"scripted:{options.scripted.name}"
    model = build_model(loaded.settings)
    return model, loaded.settings.model or model.name


def _output(options: RunOptions) -> tuple[RunOutput, Console]:
    if options.json:
        return JsonOutput(sys.stdout), Console(stderr=True)
    console = Console()
    return LiveOutput(console, TurnTracker()), console


async def _tools(stack: AsyncExitStack, launch: _Launch) -> ToolRegistry:
    sandbox = launch.loaded.settings.sandbox
    tools: list[Tool] = list(
        coding_tools(launch.workspace, sandbox=sandbox.mode, network=sandbox.network)
    )
    configs = mcp_configs(launch.loaded.settings.mcp_servers, launch.workspace)
    if configs:
        from ..tools.mcp import open_mcp_servers  # the mcp SDK loads only when used

        toolset = await stack.enter_async_context(open_mcp_servers(configs))
        tools.extend(toolset)
    return ToolRegistry(tools)


def _agent(
    launch: _Launch, registry: ToolRegistry, output: RunOutput, console: Console
) -> Agent:
    """The coding agent: settings, shell hooks and (on a terminal) the ask prompt."""
    options, settings = launch.options, launch.loaded.settings
    interactive = (
        sys.stdin.isatty() if options.interactive is None else options.interactive
    )
    hooks = build_shell_hooks(
        settings.hooks,
        cwd=launch.workspace,
        session_id=launch.session.id,
        warn=output.note,
    )
    ask = TerminalAsk(console, pause=output.pause) if interactive else None
    config = agent_config(
        settings,
        workspace=launch.workspace,
        hooks=hooks,
        ask=ask,
        mode=options.permission_mode,
        results_dir=results_dir_beside(launch.store.path, launch.session.id),
    )
    system = coding_system_prompt(launch.workspace, settings.system)
    agent = Agent(launch.model, registry, system=system, config=config)
    agent.state.read_files.restore(launch.read_files)
    return agent


async def _launch_async(launch: _Launch) -> DriveResult:
    """The command's event-loop life under one `StopWatch`: start, run, shut-down."""
    output, console = _output(launch.options)
    watch = StopWatch(output)
    async with anyio.create_task_group() as tg:
        await tg.start(watch.serve)
        result = await _launch_run(launch, output, console, watch)
        tg.cancel_scope.cancel()
    return result


async def _launch_run(
    launch: _Launch, output: RunOutput, console: Console, watch: StopWatch
) -> DriveResult:
    result = DriveResult(None, stops=watch.stops)  # if a stop ends it before the run
    with watch.scope:  # a stop before the run (or a second after it) ends it here
        async with AsyncExitStack() as stack:
            result = await _launched(stack, launch, output, console, watch)
    return result


async def _launched(
    stack: AsyncExitStack,
    launch: _Launch,
    output: RunOutput,
    console: Console,
    watch: StopWatch,
) -> DriveResult:
    """Start the tools, then drive the run (the stack closes what was started)."""
    # The model's HTTP client belongs to this event loop: close it with it.
    stack.push_async_callback(launch.model.aclose)
    registry = await _tools(stack, launch)
    describe = describe_access(registry)
    if isinstance(output, LiveOutput):
        output.tracker = TurnTracker(describe, say=warning_words(launch.model_spec))
        output.audit = launch.loaded.settings.audit
    agent = _agent(launch, registry, output, console)
    sid = launch.session.id
    recorder = SessionRecorder(
        launch.store,
        sid,
        model=launch.model_spec,
        describe=describe,
        price=pricer(),
        lease=launch.lease,
    )
    if isinstance(output, JsonOutput):
        output.line(
            {"type": "Session", "session_id": sid, "store": str(launch.store.path)}
        )
    else:
        _header(console, launch)
    resume = (
        None if launch.suspension is None else (launch.suspension, launch.decisions)
    )
    return await drive_run(
        agent,
        launch.prompt,
        history=launch.history,
        recorder=recorder,
        output=output,
        stops=watch,
        resume=resume,
    )


def _header(console: Console, launch: _Launch) -> None:
    kind = "resumed session" if launch.history else "session"
    console.print(
        f"[bold]toolweave[/] · {kind} [cyan]{launch.session.id[:12]}[/]"
        f" · {escape(launch.model_spec)} · {escape(str(launch.workspace))}",
        soft_wrap=True,
    )


def _epilogue(console: Console, launch: _Launch, result: DriveResult) -> None:
    sid = launch.session.id[:12]
    store = (
        ""
        if launch.store.path == default_store_path()
        else f" --store {launch.store.path}"
    )
    finished = result.finished
    if finished is None:
        console.print(
            f"[bold yellow]quit[/] · session [cyan]{sid}[/] kept; resume it later"
        )
    else:
        usage = finished.usage
        console.print(
            f"[bold]{finished.reason.value}[/] · {usage.total_tokens:,} tokens"
            f" · ${finished.cost:.4f} · session [cyan]{sid}[/]"
            + (f" · {escape(finished.detail)}" if finished.detail else "")
        )
    for command in ("show", "timeline", "resume"):
        console.print(
            f"[dim]  toolweave {command} {sid}{escape(store)}[/]", soft_wrap=True
        )
    if result.suspended is not None:
        for item in result.suspended.pending:
            console.print(
                f"[yellow]  waits: {item.key} {escape(item.tool)} · {escape(item.reason)}[/]",
                soft_wrap=True,
            )
        console.print(
            f"[dim]  decide: toolweave resume {sid}{escape(store)} --approve KEY"
            " | --approve-always KEY | --deny KEY[/]",
            soft_wrap=True,
        )


def _finish(launch: _Launch) -> int:
    result: DriveResult | None = None
    discarded: str | None = None
    try:
        result = anyio.run(_launch_async, launch)
    finally:
        if (
            launch.lease is not None
        ):  # the run released it; a run that never began did not
            with suppress(StoreError):
                launch.lease.release()
        if result is not None:  # after the lease: its row goes with the session
            discarded = _discard_if_no_model_reached(launch, result)
        launch.store.close()
    if discarded is not None:
        console = Console(stderr=True) if launch.options.json else Console()
        console.print(discarded, soft_wrap=True)
    elif not launch.options.json:
        _epilogue(Console(), launch, result)
    return exit_code(result)


def _discard_if_no_model_reached(launch: _Launch, result: DriveResult) -> str | None:
    """Delete the new session of a run that ended without reaching any model.

    Such a session holds the prompt and an error that says no model was
    reached (no key, no server at the URL, no API there: `NO_MODEL_REACHED`),
    nothing to resume or show: ``toolweave sessions`` would only list it as an
    empty crashed one. A run whose model answered with an error (a 429, a 500
    after every retry) is kept: a model was reached and resuming may help. A
    resumed session is always kept (its history is real), and so is a run the
    user interrupted (it can be resumed). Returns the line that says so, or
    None when the session is kept.
    """
    finished = result.finished
    if (
        launch.history
        or finished is None
        or finished.reason is not CompletionReason.ERROR
        or not finished.detail.startswith(NO_MODEL_REACHED)
    ):
        return None
    if any(m.role == "assistant" for m in finished.messages):
        return None
    sid = launch.session.id[:12]
    try:
        launch.store.delete_session(launch.session.id)
    except StoreError as exc:
        kept = f"session {sid} could not be discarded: {escape(str(exc))}"
    else:
        kept = f"no model answered, so no session was kept ({sid} discarded)"
    return f"[bold]error[/] · {escape(finished.detail)}\n[dim]  {kept}[/]"


def _prepare(
    options: RunOptions,
    workspace: Path,
    fallback_model: str | None = None,
    fallback_base_url: str | None = None,
) -> tuple[LoadedSettings, Model, str]:
    """Settings, the model, and a dry build of the agent config.

    A resumed session's model (`fallback_model`) is used unless one is given
    or configured, and the base URL it was reached at (`fallback_base_url`)
    with it, unless one is given or configured. Every ConfigError surfaces
    here, before anything is written to the store.
    """
    loaded = load_settings(workspace, overrides=options.overrides())
    settings = loaded.settings
    if options.scripted is None and not settings.model and fallback_model:
        settings = settings.model_copy(update={"model": fallback_model})
    if fallback_base_url and settings.model == fallback_model and not settings.base_url:
        settings = settings.model_copy(update={"base_url": fallback_base_url})
    loaded = replace(loaded, settings=settings)
    model, spec = _model(options, loaded)
    agent_config(
        settings,
        workspace=workspace,
        hooks=None,
        ask=None,
        mode=options.permission_mode,
    )
    mcp_configs(settings.mcp_servers, workspace)
    return loaded, model, spec


def start_session(options: RunOptions, prompt: str) -> int:
    """`toolweave run PROMPT`: a new session over the working directory. Blocks."""
    workspace = options.cwd.resolve()
    loaded, model, spec = _prepare(options, workspace)
    store = open_store(loaded.settings.store)
    base_url = loaded.settings.base_url
    try:
        session = store.create_session(
            workspace=str(workspace),
            model=spec,
            title=prompt,
            meta={"base_url": base_url} if base_url else None,
        )
    except BaseException:
        store.close()
        raise
    launch = _Launch(
        options=options,
        loaded=loaded,
        store=store,
        session=session,
        workspace=workspace,
        model=model,
        model_spec=spec,
        prompt=prompt,
    )
    return _finish(launch)


def resume_session(
    options: RunOptions,
    session_id: str,
    prompt: str | None,
    decisions: Mapping[str, str] | None = None,
) -> int:
    """`toolweave resume ID [PROMPT] [--approve KEY ...]`: continue a stored session. Blocks.

    Calls a dead process left running are answered "interrupted, outcome
    unknown", never run again (see `prepare_resume`). The session's model is
    used unless one is given or configured. The session's lease is taken
    first: a session another live process runs is refused (exit 2, naming it).
    A suspended session needs a decision for every call that waits
    (`decisions`, by key); decisions for a session that does not wait (it was
    resumed already) are refused, and nothing runs.
    """
    store = open_store(
        load_settings(options.cwd, overrides=options.overrides()).settings.store,
        existing=True,
    )
    try:
        stored = store.find_session(session_id)
        workspace = Path(stored.workspace)
        if not workspace.is_dir():
            workspace = options.cwd.resolve()
        fallback = None if stored.model.startswith("scripted") else stored.model
        loaded, model, spec = _prepare(
            options, workspace, fallback, _stored_base_url(stored)
        )
        if decisions and stored.status != "suspended":
            _check_decisions(stored, None, decisions)  # refused: nothing waits
        plan = prepare_resume(store, stored.id, prompt=prompt)
    except BaseException:
        store.close()
        raise
    try:
        _check_decisions(plan.session, plan.suspension, decisions or {})
    except BaseException:
        if plan.lease is not None:
            with suppress(StoreError):
                plan.lease.release()
        store.close()
        raise
    if plan.lease is not None:
        plan.lease.claimed()  # this run's recorder is handed it below
    note = _resume_note(plan.lost, plan.skipped, len(plan.history))
    (Console(stderr=True) if options.json else Console()).print(note)
    launch = _Launch(
        options=options,
        loaded=loaded,
        store=store,
        session=plan.session,
        workspace=workspace,
        model=model,
        model_spec=spec,
        prompt=plan.prompt,
        history=plan.history,
        read_files=plan.read_files,
        lease=plan.lease,
        suspension=plan.suspension,
        decisions=dict(decisions or {}),
    )
    return _finish(launch)


def _check_decisions(
    session: SessionInfo, suspension: Suspension | None, decisions: Mapping[str, str]
) -> None:
    """Refuse decisions for a session that does not wait, or a wait left undecided."""
    sid = session.id[:12]
    if suspension is None:
        if decisions:
            raise UsageError(
                f"session {sid} is not waiting for a decision (it is {session.status}:"
                " resumed already, or it never suspended); nothing was run"
            )
        return
    if not decisions:
        waiting = "; ".join(
            f"{p.key} {p.tool} ({p.reason})" for p in suspension.pending
        )
        raise UsageError(
            f"session {sid} waits for a decision on: {waiting}. Resume it with"
            f" --approve KEY, --approve-always KEY or --deny KEY for each"
            f" (toolweave show {sid} lists them)"
        )
    check_decisions(suspension, decisions)


def _stored_base_url(session: SessionInfo) -> str | None:
    """The ``--base-url`` a session's model was reached at, as `start_session` kept it."""
    value = session.meta.get("base_url")
    return value if isinstance(value, str) and value else None


def _resume_note(
    lost: Sequence[object], skipped: Sequence[object], messages: int
) -> str:
    parts = [f"Resuming from {messages} stored messages."]
    if lost:
        parts.append(
            f"{len(lost)} call(s) were running when the process died: recorded as"
            " interrupted, outcome unknown, and not run again."
        )
    if skipped:
        parts.append(f"{len(skipped)} call(s) had not started: answered as not run.")
    return " ".join(parts)
