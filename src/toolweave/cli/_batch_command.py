"""`toolweave batch tasks.jsonl`: the command-line face of `toolweave.cluster.run_batch`.

The command lives here, with typer and rich; `toolweave.cluster` knows neither.
`_app` registers it on the `toolweave` app (no registration by import).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console

from .._exceptions import BatchBusyError, StoreError, UsageError
from ..cluster import (
    BatchStatistics,
    default_output_path,
    describe_statistics,
    open_default_store,
    run_batch,
)
from ..execution import PermissionMode
from ..loop import AgentConfig, HookSettings, load_hook_settings
from ..sessions import SessionStore
from ._batch_progress import batch_progress
from ._errors import fail
from ._ray_options import json_object, ray_target
from ._ray_options import session_resources as _session_resources
from ._session_run import open_store
from ._settings import load_settings

__all__ = ["StoreOpener", "make_batch_command", "open_batch_store"]

StoreOpener = Callable[[str | None], SessionStore]
"""Opens the session store named by ``--store`` (None = the default one)."""

TasksArg = Annotated[
    Path,
    typer.Argument(
        metavar="TASKS",
        help="JSONL file, one session per line: prompt, optional id, model, "
        "workspace, system, budget, metadata.",
        exists=True,
        dir_okay=False,
        readable=True,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Result JSONL (default: TASKS.results.jsonl)."),
]
ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model for lines that name none.")
]
ToolsOpt = Annotated[
    str | None,
    typer.Option(
        "--tools",
        help="Required: 'coding' (the built-in coding tools over each task's"
        " workspace), 'module:function' (a factory of tools), or 'none'.",
    ),
]
ModeOpt = Annotated[
    str,
    typer.Option(
        "--permission-mode",
        help="default, accept_edits, bypass or plan. Nobody is asked in a batch:"
        " an ask is denied unless the mode or a rule allows the call.",
    ),
]
OnAskOpt = Annotated[
    str,
    typer.Option(
        "--on-ask",
        help="deny (default): an ask is denied; suspend: the session stops and"
        " waits, is reported 'suspended' (not failed, never re-run) and is"
        " decided later with `toolweave resume ID --approve KEY` / `--deny KEY`.",
    ),
]
NO_TOOLS_HELP = (
    "say which tools the sessions get: --tools coding (the built-in coding tools"
    " over each task's workspace), --tools module:function, or --tools none"
)
SessionsOpt = Annotated[
    int, typer.Option("--max-sessions", "-j", min=1, help="Sessions at once.")
]
RayOpt = Annotated[
    bool,
    typer.Option(
        "--ray",
        help="Run sessions on a private local Ray cluster started for the batch.",
    ),
]
AddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Join this Ray cluster instead (auto, host:port, ray://host:10001;"
        " implies --ray).",
    ),
]
RuntimeEnvOpt = Annotated[
    str | None,
    typer.Option(
        "--runtime-env",
        help="Ray runtime_env of the batch (env_vars, working_dir, pip, ...): a"
        " JSON object or the path of a JSON file.",
    ),
]
ResourcesOpt = Annotated[
    str | None,
    typer.Option(
        "--session-resources",
        help="Ray resources of each session (a JSON object, or the path of a"
        " JSON file), merged over --session-cpus.",
    ),
]
CpusOpt = Annotated[
    float,
    typer.Option(
        "--session-cpus",
        min=0.0,
        help="Ray CPUs each session holds (0: bounded by --max-sessions only; "
        "keep 0 when tools run on Ray).",
    ),
]
RetryOpt = Annotated[
    bool, typer.Option("--retry-failed", help="Re-run sessions that did not complete.")
]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store", help="Session database (default: ~/.toolweave/sessions.db)."
    ),
]
NoStoreOpt = Annotated[
    bool,
    typer.Option("--no-store", help="Do not record sessions (results JSONL only)."),
]
ProgressOpt = Annotated[
    bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")
]


def _summary(stats: BatchStatistics, target: Path) -> str:
    return f"{stats.total} tasks · {describe_statistics(stats)} → {target}"


def make_batch_command(
    open_store: StoreOpener = open_default_store,
    hooks_for: Callable[[Path], HookSettings] = load_hook_settings,
) -> Callable[..., None]:
    """The ``batch`` command function for a typer app, opening stores with `open_store`.

    The CLI passes its own opener so ``--store`` and settings resolve exactly as
    for ``toolweave run``; sessions then show in ``toolweave sessions``. Every
    session runs the shell hooks `hooks_for` finds from the working directory
    (default: the user's and the project's `toolweave.toml` hooks, as
    ``toolweave run`` does), each in its session's workspace.
    """

    def batch(
        tasks: TasksArg,
        output: OutputOpt = None,
        model: ModelOpt = None,
        tools: ToolsOpt = None,
        max_sessions: SessionsOpt = 8,
        ray: RayOpt = False,
        ray_address: AddressOpt = None,
        session_cpus: CpusOpt = 0.0,
        session_resources: ResourcesOpt = None,
        runtime_env: RuntimeEnvOpt = None,
        retry_failed: RetryOpt = False,
        store: StoreOpt = None,
        no_store: NoStoreOpt = False,
        progress: ProgressOpt = True,
        permission_mode: ModeOpt = "default",
        on_ask: OnAskOpt = "deny",
    ) -> None:
        """Run one agent session per line of TASKS; re-running skips what is done."""
        console = Console(stderr=True)
        try:
            if on_ask not in ("deny", "suspend"):
                raise UsageError(f"--on-ask must be deny or suspend, not {on_ask!r}")
            config = AgentConfig(
                permission_mode=PermissionMode(permission_mode),
                on_ask="suspend" if on_ask == "suspend" else "deny",
            )
            if tools is None:
                raise UsageError(NO_TOOLS_HELP)
            hooks = hooks_for(Path.cwd())
            resources = _session_resources(session_cpus, session_resources)
            ray_init = _ray_init(runtime_env)
        except (UsageError, ValueError) as exc:
            raise fail(exc, console) from exc
        target = output or default_output_path(tasks)
        run = partial(
            run_batch,
            tasks,
            output=target,
            model=model,
            tools=None if tools == "none" else tools,
            config=config,
            max_sessions=max_sessions,
            ray=ray,
            ray_address=ray_address,
            session_resources=resources,
            ray_init=ray_init,
            retry_failed=retry_failed,
            hooks=hooks,
        )
        target_line = ray_target(ray, ray_address)
        if target_line is not None:
            console.print(target_line, markup=False, highlight=False)
        try:
            db = None if no_store else open_store(store)
            try:
                stats = _drive(partial(run, store=db), console, progress)
            finally:
                if db is not None:
                    db.close()
        except (UsageError, StoreError, BatchBusyError) as exc:
            raise fail(exc, console) from exc
        console.print(_summary(stats, target), markup=False, highlight=False)

    return batch


def _ray_init(runtime_env: str | None) -> dict[str, object] | None:
    if runtime_env is None:
        return None
    return {"runtime_env": json_object(runtime_env, "--runtime-env")}


def _drive(
    run: Callable[..., Awaitable[BatchStatistics]], console: Console, progress: bool
) -> BatchStatistics:
    async def main() -> BatchStatistics:
        if not progress:
            return await run()
        with batch_progress(console) as update:
            return await run(on_update=update)

    return anyio.run(main)


def open_batch_store(store: str | None) -> SessionStore:
    """The store named by ``--store``, else by the settings, else the default.

    ``toolweave batch`` opens stores with it, so ``--store`` resolves exactly as
    for ``toolweave run`` and its sessions show in ``toolweave sessions``.
    """
    return open_store(store or load_settings(Path.cwd()).settings.store)
