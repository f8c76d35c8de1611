"""ManifestTool: a tool declared in a manifest, run by a command or a Python function."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, final

from ..._exceptions import ToolError, ToolInputError
from ..._native.threads import run_in_worker_thread
from .._access import Access, Concurrency, Interrupt
from .._context import ToolContext
from .._declaration import Declaration
from ._command import CommandOutcome, run_command
from ._schema_tool import JSONSchemaTool
from ._spec import ToolSpec
from ._template import TemplateError, render_arg, render_keys

__all__ = ["CommandRunner", "EntryPointRunner", "ManifestTool", "manifest_declaration"]

_EXCERPT = 2_000


@dataclass(frozen=True, slots=True)
class CommandRunner:
    """Runs an argv template; the validated input goes to stdin as JSON."""

    argv: tuple[str, ...]
    """The argv template; ``{name}`` placeholders take input values."""
    cwd: str
    """The working directory (absolute)."""
    env: dict[str, str] | None
    """Extra environment variables."""
    ok_exit_codes: tuple[int, ...]
    """Exit statuses that mean success."""
    max_output_bytes: int
    """Stdout beyond this many bytes is cut."""

    async def __call__(self, args: dict[str, Any]) -> str:
        try:
            argv = [render_arg(part, args) for part in self.argv]
        except TemplateError as exc:
            raise ToolInputError(str(exc)) from exc
        data = (json.dumps(args, ensure_ascii=False) + "\n").encode()
        try:
            outcome = await run_command(
                argv,
                stdin=data,
                cwd=self.cwd,
                env=self.env,
                max_output_bytes=self.max_output_bytes,
            )
        except OSError as exc:
            raise ToolError(f"command {argv[0]!r} could not be started: {exc}") from exc
        if outcome.returncode not in self.ok_exit_codes:
            raise ToolError(_failure_text(outcome))
        note = (
            f"\n[output cut at {self.max_output_bytes} bytes]"
            if outcome.truncated
            else ""
        )
        return outcome.stdout + note


def _failure_text(outcome: CommandOutcome) -> str:
    code = outcome.returncode
    status = (
        f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    )
    parts = [f"command {status}"]
    if outcome.stderr.strip():
        parts.append(f"stderr:\n{outcome.stderr.strip()[-_EXCERPT:]}")
    if outcome.stdout.strip():
        parts.append(f"stdout:\n{outcome.stdout.strip()[-_EXCERPT:]}")
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class EntryPointRunner:
    """Calls a Python function with the validated input as keyword arguments."""

    function: Callable[..., Any]
    """The resolved ``module:function``."""
    abandon_on_cancel: bool
    """A sync function's thread is abandoned on cancel (CANCEL tools)."""

    async def __call__(self, args: dict[str, Any]) -> Any:
        if inspect.iscoroutinefunction(self.function):
            result: Awaitable[Any] = self.function(**args)
            return await result
        return await run_in_worker_thread(
            partial(self.function, **args), abandon_on_cancel=self.abandon_on_cancel
        )


@final
class ManifestTool(JSONSchemaTool):
    """A tool loaded from a manifest file (see `load_manifest`).

    `executionMode: "sequential"` makes it SEQUENTIAL, ``"parallel"`` SAFE; the
    Dispatcher honours that in every policy and in streaming, because it is an
    ordinary `Tool` declaration. An ``access`` template becomes the call's
    `Access`, filled from the validated input; a template naming a value the input
    lacks makes the call a barrier (fail closed).

    A ``timeout`` is enforced by the lifecycle, which cuts off only CANCEL tools
    (for a command: its whole process group is killed); a BLOCK tool runs to its
    end and its late result is replaced by the timeout error.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        runner: CommandRunner | EntryPointRunner,
        declaration: Declaration,
        source: Path,
        **options: Any,
    ) -> None:
        super().__init__(
            name=name,
            description=description,
            input_schema=input_schema,
            declaration=declaration,
            runs_in_thread=isinstance(runner, EntryPointRunner)
            and not inspect.iscoroutinefunction(runner.function),
            **options,
        )
        self.runner = runner
        """What runs a call: a `CommandRunner` or an `EntryPointRunner`."""
        self.execution_mode: Literal["sequential", "parallel"] = (
            "parallel" if declaration.concurrency is Concurrency.SAFE else "sequential"
        )
        """The manifest's ``executionMode``."""
        self.source = source
        """The manifest file the tool came from."""

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the command or the function.

        Raises:
            ToolError: the command exited with a status not in ``okExitCodes``
                (stderr and stdout excerpts are the message) or could not start;
                or the function raised.
        """
        del ctx
        return await self.runner(args)


def manifest_declaration(
    spec: ToolSpec,
    access: tuple[tuple[str, ...], tuple[str, ...]] | None,
    base_dir: str,
) -> Declaration:
    """The `Declaration` a manifest entry makes: the record every tool path makes.

    ``executionMode`` ``"parallel"`` is SAFE, ``"sequential"`` SEQUENTIAL; the
    ``access`` templates (checked against the input schema by the loader)
    become a callable filling them from the validated input, relative paths
    against `base_dir`.
    """
    return Declaration(
        concurrency=(
            Concurrency.SAFE
            if spec.execution_mode == "parallel"
            else Concurrency.SEQUENTIAL
        ),
        access=None if access is None else partial(_render_access, access, base_dir),
        interrupt=Interrupt.CANCEL if spec.interrupt == "cancel" else Interrupt.BLOCK,
        timeout=spec.timeout,
    )


def _render_access(
    templates: tuple[tuple[str, ...], tuple[str, ...]],
    base_dir: str,
    args: dict[str, Any],
) -> Access:
    reads, writes = templates
    return Access(
        reads=render_keys(reads, args, base_dir=base_dir),
        writes=render_keys(writes, args, base_dir=base_dir),
    )
