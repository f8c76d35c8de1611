"""The typer application behind the `toolweave` command."""

from __future__ import annotations

import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.markup import escape

from .. import __version__
from .._exceptions import ConfigError, StoreError, ToolweaveError, UsageError
from ..sessions import SQLiteSessionStore
from ._batch_command import make_batch_command, open_batch_store
from ._config_cmd import render_config
from ._errors import fail
from ._help import Command, Group
from ._output_guard import guarded_output
from ._session_run import (
    RunOptions,
    default_store_path,
    open_store,
    resume_session,
    start_session,
    store_path,
)
from ._settings import load_settings
from ._show import render_sessions, render_transcript
from ._signals import entry_signals
from ._timeline import write_timeline
from .demo import render_epilogue, render_summary, run_demo, run_schedules_demo

__all__ = ["app", "main"]

app = typer.Typer(
    name="toolweave",
    cls=Group,
    help="An agent runtime whose heart is safe parallel tool execution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="provider:name, e.g. anthropic:claude-sonnet-4-5, openai:gpt-4.1,"
        " openai-compatible:NAME.",
    ),
]
BaseUrlOpt = Annotated[
    str | None, typer.Option("--base-url", help="Server of an openai-compatible model.")
]
StreamOpt = Annotated[
    bool | None,
    typer.Option(
        "--stream/--no-stream",
        help="Stream model responses (default). --no-stream sends each request"
        " whole; a server that refuses to stream with tools is detected anyway.",
    ),
]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store", help="Session database (default ~/.toolweave/sessions.db)."
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json", help="Print the events as JSON lines (first line: the session)."
    ),
]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--permission-mode",
        help="default, accept_edits, bypass or plan. Without a terminal, asks are"
        " denied unless the mode allows the call.",
    ),
]
OnAskOpt = Annotated[
    str | None,
    typer.Option(
        "--on-ask",
        help="With nobody to ask (no terminal): deny (default) or suspend the session"
        " until `toolweave resume ID --approve KEY` / `--deny KEY` (exit status 3).",
    ),
]
KeysOpt = Annotated[list[str] | None, typer.Option(metavar="KEY")]
SandboxOpt = Annotated[
    str | None,
    typer.Option(
        "--sandbox",
        help="How bash commands are confined: read-only, workspace-write (default)"
        " or off. Commands proven read-only always run read-only.",
    ),
]
AuditOpt = Annotated[
    str | None,
    typer.Option(
        "--audit",
        help="Declaration audit of tool calls: off, warn (report what a call does"
        " beyond its declared access) or enforce (stop it). Default: the settings'"
        " `audit`, else off.",
    ),
]
ScriptedOpt = Annotated[
    Path | None,
    typer.Option(
        "--scripted",
        hidden=True,
        help="TESTING AID: replay a JSON model script instead of a real model.",
    ),
]


def _single(group: BaseExceptionGroup[BaseException]) -> Exception:
    """The one ToolweaveError a task group wrapped, or the group re-raised."""
    leaves = list(_leaves(group))
    if len(leaves) == 1 and isinstance(leaves[0], ToolweaveError):
        return leaves[0]
    raise group


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _options(
    model: str | None,
    base_url: str | None,
    store: str | None,
    json: bool,
    mode: str | None,
    scripted: Path | None,
    stream: bool | None = None,
    sandbox: str | None = None,
    audit: str | None = None,
    on_ask: str | None = None,
) -> RunOptions:
    if mode is not None and mode not in ("default", "accept_edits", "bypass", "plan"):
        raise ConfigError(
            f"--permission-mode must be default, accept_edits, bypass or plan, not {mode!r}"
        )
    if audit is not None and audit not in ("off", "warn", "enforce"):
        raise ConfigError(f"--audit must be off, warn or enforce, not {audit!r}")
    if on_ask is not None and on_ask not in ("deny", "suspend"):
        raise ConfigError(f"--on-ask must be deny or suspend, not {on_ask!r}")
    return RunOptions(
        cwd=Path.cwd(),
        model=model,
        base_url=base_url,
        stream=stream,
        store=store,
        json=json,
        permission_mode=mode,
        sandbox=sandbox,
        audit=audit,
        on_ask=on_ask,
        scripted=scripted,
    )


@app.command(cls=Command)
def run(
    task: Annotated[
        str, typer.Argument(metavar="TASK", help="What the agent should do.")
    ],
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    store: StoreOpt = None,
    json: JsonOpt = False,
    permission_mode: ModeOpt = None,
    scripted: ScriptedOpt = None,
    stream: StreamOpt = None,
    sandbox: SandboxOpt = None,
    audit: AuditOpt = None,
    on_ask: OnAskOpt = None,
) -> None:
    """Run a coding agent on TASK over the current directory, live.

    Ctrl-C interrupts the current batch and leaves a resumable session; a second
    Ctrl-C quits at once.
    """
    with _session_errors():
        code = start_session(
            _options(
                model,
                base_url,
                store,
                json,
                permission_mode,
                scripted,
                stream,
                sandbox=sandbox,
                audit=audit,
                on_ask=on_ask,
            ),
            task,
        )
    raise typer.Exit(code)


def _decisions(
    approve: list[str], approve_always: list[str], deny: list[str]
) -> dict[str, str]:
    """The decisions by call key; a key given two answers is an error."""
    decisions: dict[str, str] = {}
    for keys, answer in (
        (approve, "allow"),
        (approve_always, "always"),
        (deny, "deny"),
    ):
        for key in keys:
            if decisions.get(key, answer) != answer:
                raise UsageError(f"call {key} was given two different decisions")
            decisions[key] = answer
    return decisions


@contextmanager
def _session_errors() -> Iterator[None]:
    """Bad settings, or a store or MCP server failing to start: a clean error exit."""
    try:
        yield
    except ToolweaveError as exc:
        raise fail(exc) from exc
    except BaseExceptionGroup as group:
        raise fail(_single(group)) from group


@app.command(cls=Command)
def resume(
    session: Annotated[
        str, typer.Argument(metavar="ID", help="Session id (or a unique prefix).")
    ],
    prompt: Annotated[
        str | None,
        typer.Argument(metavar="PROMPT", help="What to say next (default: carry on)."),
    ] = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    store: StoreOpt = None,
    json: JsonOpt = False,
    permission_mode: ModeOpt = None,
    scripted: ScriptedOpt = None,
    stream: StreamOpt = None,
    sandbox: SandboxOpt = None,
    audit: AuditOpt = None,
    on_ask: OnAskOpt = None,
    approve: KeysOpt = None,
    approve_always: KeysOpt = None,
    deny: KeysOpt = None,
) -> None:
    """Continue a stored session. Calls cut off by a crash are never re-run.

    A suspended session continues once every waiting call (`toolweave show ID`
    lists their keys) is decided: --approve KEY, --approve-always KEY (also
    approves such calls for the rest of the session) or --deny KEY.
    """
    with _session_errors():
        options = _options(
            model,
            base_url,
            store,
            json,
            permission_mode,
            scripted,
            stream,
            sandbox=sandbox,
            audit=audit,
            on_ask=on_ask,
        )
        decisions = _decisions(approve or [], approve_always or [], deny or [])
        code = resume_session(options, session, prompt, decisions)
    raise typer.Exit(code)


@app.command(cls=Command)
def sessions(
    store: StoreOpt = None,
    limit: Annotated[int, typer.Option(help="How many to list.")] = 30,
) -> None:
    """List stored sessions, newest first."""
    console = Console()
    try:
        named = store or load_settings(Path.cwd()).settings.store
        if named is None and not default_store_path().is_file():
            found = []  # nothing recorded yet (and nothing is created to say so)
        else:
            with _reading(named) as db:
                found = db.list_sessions(limit=limit)
    except (UsageError, StoreError) as exc:
        raise fail(exc) from exc
    console.print(render_sessions(found, width=console.width))


@contextmanager
def _reading(store: str | None) -> Iterator[SQLiteSessionStore]:
    """The store opened read-only (a read-only directory or mount works), then closed."""
    db = open_store(store, read_only=True)
    try:
        yield db
    finally:
        db.close()


@app.command(cls=Command)
def show(
    session: Annotated[
        str, typer.Argument(metavar="ID", help="Session id (or a unique prefix).")
    ],
    store: StoreOpt = None,
    full: Annotated[
        bool, typer.Option("--full", help="Show tool results in full.")
    ] = False,
) -> None:
    """Print a session's transcript."""
    try:
        with _reading(store or load_settings(Path.cwd()).settings.store) as db:
            parts = list(
                render_transcript(db, session, full=full)
            )  # damage: nothing shown
    except (UsageError, StoreError) as exc:
        raise fail(exc) from exc
    console = Console()
    for part in parts:
        console.print(part)


@app.command(cls=Command)
def timeline(
    session: Annotated[
        str, typer.Argument(metavar="ID", help="Session id (or a unique prefix).")
    ],
    store: StoreOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="The HTML file to write.")
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open it in a browser.")
    ] = False,
    same_scale: Annotated[
        bool,
        typer.Option(
            "--same-scale",
            help="Draw every iteration on one time scale, so their lengths compare.",
        ),
    ] = False,
) -> None:
    """Write a self-contained HTML timeline of what ran in parallel."""
    try:
        with _reading(store or load_settings(Path.cwd()).settings.store) as db:
            sid = db.find_session(session).id
            path, bars = write_timeline(
                db,
                sid,
                output or Path(f"toolweave-timeline-{sid[:12]}.html"),
                same_scale=same_scale,
            )
    except (UsageError, StoreError, OSError) as exc:
        raise fail(exc) from exc
    Console().print(f"wrote {escape(str(path))} ({bars} tool calls)")
    if open_page:
        webbrowser.open(path.resolve().as_uri())


@app.command(cls=Command)
def config() -> None:
    """Show the effective settings and where each value came from."""
    try:
        Console().print(render_config(load_settings(Path.cwd())))
    except UsageError as exc:
        raise fail(exc) from exc


@app.command(cls=Command)
def demo(
    schedules: Annotated[
        bool,
        typer.Option(
            "--schedules",
            help="Instead: one simulated batch through every scheduling policy.",
        ),
    ] = False,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir", help="Where to create the workspace (default: a new temp dir)."
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="Where to record the demo session (default: the database"
            " `toolweave sessions` reads, ~/.toolweave/sessions.db).",
        ),
    ] = None,
) -> None:
    """A scripted coding session over a real git workspace, then the numbers.

    No API key needed: the model's replies are scripted; the tools really run.
    """
    console = Console()
    if schedules:
        anyio.run(run_schedules_demo, console)
        return
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True)
    try:
        db = store_path(store or load_settings(Path.cwd()).settings.store)
    except UsageError as exc:
        raise fail(exc) from exc
    result = anyio.run(lambda: run_demo(console, root=directory, store_path=db))
    console.print(render_summary(result.stats))
    console.print(
        render_epilogue(result, default=db == default_store_path()), soft_wrap=True
    )
    if result.finished is None:
        raise typer.Exit(130)


app.command("batch", cls=Command)(make_batch_command(open_batch_store))


def _show_version(value: bool) -> None:
    if value:
        Console().print(f"toolweave {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """An agent runtime whose heart is safe parallel tool execution."""
    del version


def main() -> None:
    """Console-script entry point (named toolweave however it was started).

    A reader that goes away (a closed pipe, a hung-up terminal) or a stop
    signal outside a run ends the process quietly, never with a traceback
    (`guarded_output`, `entry_signals`; during a run `drive_run` handles both).
    """
    with guarded_output(), entry_signals():
        app(prog_name="toolweave")
