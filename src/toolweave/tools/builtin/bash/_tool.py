"""The `bash` tool: one shell command in the workspace, declared by what it can touch."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...._exceptions import ToolError, ToolInputError, ToolTimeoutError
from ..._access import Access, Concurrency, Interrupt, Warrant
from ..._context import ToolContext
from ..._sandbox_mode import SandboxMode, sandbox_mode
from ..._tool import PermissionCheck, Tool
from .._readstate import changed_read_files, read_fingerprints
from .._workspace import Workspace
from ..sandbox import (
    Backend,
    Sandbox,
    conservative_read_only,
    refusal_note,
    restored_note,
    unconfined_notice,
)
from ._classifier import Prefixes, classify_bash, parse_prefixes, read_only_form
from ._git import GIT_READ_UNSET, git_read_env
from ._parse import parse_script
from ._process import ShellOutcome, run_shell
from ._results import failed, status, status_name, with_hint, with_notes
from ._rules import ShellCommand, command_parts
from ._writes import Declared, covers, declared_access

__all__ = ["BashTool"]

DEFAULT_TIMEOUT = 120.0
"""Seconds a command may run when the call gives no timeout."""

MAX_TIMEOUT = 600.0
"""The longest timeout a call may ask for."""

DEFAULT_MAX_OUTPUT_BYTES = 1_000_000
"""Output kept per call: the first and last halves, with a marker between.

Large on purpose: output over the tool's `max_result_chars` is saved whole to
the session's results directory by the lifecycle and the model gets a preview
and the file's path, so this cap only bounds memory, not what the model sees.
"""

MAX_COMMAND_BYTES = 131_071
"""The longest command (UTF-8 bytes): ``bash -c`` gets it as one argument, and
Linux refuses an argument of 128 KiB or more (MAX_ARG_STRLEN, with its NUL)."""

_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",  # read-only git never takes index.lock (parallel-safe)
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}


class BashInput(BaseModel):
    """Input of `bash`."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The bash command to run.")
    timeout: float | None = Field(
        None,
        gt=0,
        le=MAX_TIMEOUT,
        allow_inf_nan=False,
        description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
    )
    writes: bool = Field(
        False,
        description=(
            "Set true if the command must change files. It then runs on its own (never"
            " in parallel) under the session's sandbox mode. Commands judged read-only"
            " run in parallel inside a read-only sandbox, where writes fail."
        ),
    )

    @field_validator("timeout", mode="before")
    @classmethod
    def _seconds_not_a_flag(cls, value: object) -> object:
        """``true`` would otherwise pass as 1 second: a model's slip, not a time."""
        if isinstance(value, bool):
            raise ValueError("timeout is a number of seconds, not true/false")
        return value


_DECLARED_KEPT = 256
"""Declared grants remembered (the most recent commands)."""


class BashTool(Tool):
    """Run a bash command with the workspace root as working directory.

    Concurrency comes from the command: SAFE only when `classify_bash` proves
    it read-only (then access reads ``fs:<root>`` and ``proc:bash``), else SEQUENTIAL with
    undeclared access — a barrier (as in Claude Code). A command not proven
    read-only is also an *ask* in the permission stage (`check_permissions`).
    Interrupt: CANCEL; the
    process group is killed. A failing command aborts running sibling bash
    calls (as in Claude Code).

    Every call runs in the OS sandbox (`Sandbox`): a call proven read-only
    (SAFE, so the gate may run it in parallel) runs read-only whatever the
    mode; any other call runs under `sandbox` (AgentConfig's mode, through the
    session state, wins). A write the sandbox refused is reported with a note
    telling the model to ask again with ``writes: true`` (which makes the call
    SEQUENTIAL). With no sandbox backend at all, only
    `conservative_read_only` commands count as read-only.

    Each call is a fresh ``bash -c`` in a new session: stdin is /dev/null,
    stdout and stderr are interleaved and capped, and the whole process group
    is killed when the shell exits or the timeout passes. A non-zero exit is an
    error result (except exit 1 of grep/diff/test-like commands, which is an
    answer). If the command changed files the session had read, the result says
    which, so the model re-reads before editing them (v2.1.91 stale hint).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | Workspace,
        *,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        env: dict[str, str] | None = None,
        sandbox: SandboxMode | str = SandboxMode.WORKSPACE_WRITE,
        network: bool = True,
        sandbox_backend: Backend | None = None,
        read_only_commands: Iterable[str] = (),
    ) -> None:
        """See the class; `sandbox_backend` forces a backend (tests, benchmarks).

        Raises:
            ConfigError: `sandbox` names no mode.
        """
        self.workspace = root if isinstance(root, Workspace) else Workspace(root)
        """The working directory of every command."""
        self.sandbox_mode = sandbox_mode(sandbox)
        """The mode of calls not proven read-only, unless the session sets one."""
        self.sandbox = Sandbox(
            self.workspace.root, network=network, backend=sandbox_backend
        )
        """Confines every call."""
        self.max_output_bytes = max_output_bytes
        """Output kept per call."""
        self.env = {**(os.environ if env is None else env), **_ENV}
        """The environment commands run with."""
        self.read_only_commands: Prefixes = parse_prefixes(read_only_commands)
        """User-declared read-only command prefixes (``("bd", "show")``), see `teach`."""
        self._declared: dict[str, Declared] = {}
        """The access last declared to the gate per command (`access_for`)."""
        super().__init__(
            name="bash",
            description=(
                "Run a bash command in the workspace root and return its output "
                "(stdout and stderr together) and exit code. Each call is a new "
                "shell (stdin is empty); background processes are killed when it "
                "exits. Long output is saved to a file: you get a preview and its path "
                "(page through it with read). "
                "Prefer read/grep/glob for reading files."
            ),
            input_model=BashInput,
            concurrency=self._concurrency,
            interrupt=Interrupt.CANCEL,
            timeout=MAX_TIMEOUT + 30,
            abort_siblings_on_error=True,
        )

    @cached_property
    def warrant(self) -> Warrant:
        """ENFORCED where an OS sandbox backend runs read-only calls read-only.

        A command the classifier proves read-only then cannot write whatever it
        really does, so it may start while the response streams. With no
        backend only the classifier's small conservative core is SAFE, and on
        its judgement alone: UNVOUCHED (it overlaps, once the response is final).
        """
        if self.sandbox.backend_for(SandboxMode.READ_ONLY) is None:
            return Warrant.UNVOUCHED
        return Warrant.ENFORCED

    def teach(self, read_only_commands: Iterable[str]) -> None:
        """Add user read-only command prefixes (``"bd show"``, ``"gh api"``).

        A command whose every simple command starts with a built-in read-only
        command or one of these prefixes (whole words) is SAFE, still subject
        to the classifier's checks on redirections, assignments and
        substitutions.

        Raises:
            ConfigError: a prefix is empty or not shell words.
        """
        added = parse_prefixes(read_only_commands)
        self.read_only_commands = tuple(
            dict.fromkeys((*self.read_only_commands, *added))
        )

    async def warm_declarations(self, raw_input: Mapping[str, Any]) -> None:
        """Parse the command on a worker thread before the gate needs it.

        The gate's `concurrency_for` and the permission rules then find both
        parses cached (`parse_script`, `command_parts`), so the event loop never
        parses. Both are bounded (size cap, parse and walk deadlines), so the
        worker always comes back and no thread is ever left stuck.
        """
        command = raw_input.get("command")
        if isinstance(command, str):
            await anyio.to_thread.run_sync(_parse_both, command)

    def _concurrency(self, args: dict[str, Any]) -> Concurrency:
        """The classifier's verdict, narrowed when no sandbox could enforce it."""
        if args.get("writes"):
            return Concurrency.SEQUENTIAL
        unenforced = self.sandbox.backend_for(SandboxMode.READ_ONLY) is None
        verdict = classify_bash(
            args["command"],
            read_only_commands=self.read_only_commands,
            conservative=unenforced,
        )
        if unenforced and not conservative_read_only(args["command"]):
            return Concurrency.SEQUENTIAL
        if verdict is Concurrency.SEQUENTIAL and not unenforced:
            declared = self._access(args)
            if declared is not None and declared.grants:
                return Concurrency.SAFE  # its declared writes are all it can write
        return verdict

    def _read_only(self, args: dict[str, Any]) -> bool:
        """SAFE and writing nothing: the classifier's read-only verdict."""
        if self.concurrency_for(args) is not Concurrency.SAFE:
            return False
        declared = self._access(args)
        return declared is None or not declared.grants

    def _access(self, args: dict[str, Any]) -> Declared | None:
        """The access the parse declares (see `declared_access`); None if not known.

        Only where a backend enforces it: with none it is never used.
        """
        if (
            args.get("writes")
            or self.sandbox.backend_for(SandboxMode.READ_ONLY) is None
        ):
            return None
        declared = declared_access(args["command"], self.workspace.root)
        if declared is None:
            return None
        reads = declared.reads if self.sandbox.reads_confinable() else None
        grants = declared.grants
        if self.sandbox_mode is SandboxMode.READ_ONLY:
            grants = ()  # a read-only tool grants nothing
        return Declared(grants, reads)

    def permission_subject(self, args: dict[str, Any]) -> ShellCommand:
        """The command, for rules such as ``bash(git log:*)``: rules see every part."""
        return ShellCommand(args["command"])

    async def check_permissions(
        self, args: dict[str, Any], ctx: ToolContext
    ) -> PermissionCheck:
        """Ask for any command the classifier does not prove read-only.

        As in Claude Code's default mode: a read-only command runs, anything
        else needs an allow rule, a hook's allow, bypass mode or the user's yes.
        """
        del ctx
        if self._read_only(args):  # declared writes are still writes: they ask
            return PermissionCheck()
        command = ShellCommand(args["command"])
        return PermissionCheck(
            "ask",
            f"bash: {str(command)!r} is not provably read-only",
            rules=_rules_for(command),
        )

    def access_for(self, args: dict[str, Any]) -> Access | None:
        """When SAFE: its declared reads (else the workspace) and enforced grants.

        Anything else is a barrier (None).
        """
        self._declared.pop(args["command"], None)
        if self.concurrency_for(args) is not Concurrency.SAFE:
            return None
        declared = self._access(args)
        if declared is not None:  # what the gate schedules by: the run checks it
            self._declared[args["command"]] = declared
            while len(self._declared) > _DECLARED_KEPT:
                del self._declared[next(iter(self._declared))]
        grants = declared.grants if declared is not None else ()
        paths = (
            [self.workspace.root] if declared is None or declared.reads is None else []
        )
        paths += [Path(r) for r in declared.reads or ()] if declared else []
        writes = tuple(Workspace.key(Path(g.path)) for g in grants)
        reads = (*(Workspace.key(p) for p in paths), "proc:bash")
        return Access(reads=reads, writes=writes)

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the command; returns its output, or raises for failure or timeout."""
        command = args["command"]
        if "\x00" in command:
            raise ToolInputError("the command contains a NUL byte")
        size = len(command.encode())
        if size > MAX_COMMAND_BYTES:
            raise ToolInputError(
                f"the command is {size:,} bytes; bash can be given at most "
                f"{MAX_COMMAND_BYTES:,} (Linux's limit on one argument). Write the "
                "script to a file and run that file instead."
            )
        timeout = args["timeout"] or DEFAULT_TIMEOUT
        before = read_fingerprints(ctx.state)
        outcome, notes = await self._run_confined(command, args, ctx, timeout)
        changed = changed_read_files(before, read_fingerprints(ctx.state))
        text = with_hint(outcome.output, changed, self.workspace)
        if outcome.timed_out:
            raise ToolTimeoutError(
                f"Command timed out after {timeout:g}s; its process group was "
                f"killed.\n{with_notes(text, notes)}".rstrip()
            )
        if outcome.returncode != 0:
            text = f"{text.rstrip()}\n[{status(outcome)}]".lstrip()
        text = with_notes(text, notes)
        if failed(await status_name(command, outcome), outcome):
            raise ToolError(text)
        return text if text.strip() else "(no output)"

    async def _run_confined(
        self, command: str, args: dict[str, Any], ctx: ToolContext, limit: float
    ) -> tuple[ShellOutcome, list[str]]:
        """Run under the call's sandbox mode; the outcome and the notes it earned."""
        declared = self._declared.get(command)
        forced = self.concurrency_for(args) is Concurrency.SAFE
        configured = ctx.state.sandbox or self.sandbox_mode
        mode = SandboxMode.READ_ONLY if forced else configured
        access = self._access(args) if forced else None
        if declared is not None:  # the gate scheduled it by `declared`
            if not forced or not covers(declared, access):
                raise ToolError(
                    "not run: the paths this command touches changed between its"
                    " declaration and its start (a link or a directory moved);"
                    " nothing was written. Run it again."
                )
            access = declared  # the keys the gate scheduled it by
        if configured is SandboxMode.READ_ONLY and access is not None:
            access = Declared((), access.reads)  # the session writes nothing
        grants = access.grants if access is not None else ()
        reads = access.reads if access is not None else None
        env, run = self.env, command
        if forced and not any(g.kind == "git" for g in grants):
            # may run in parallel: git reads run no configured programs (git
            # add / commit run as they would on their own, hooks included)
            run = await anyio.to_thread.run_sync(read_only_form, command)
            env = _read_only_env(env)
        root = self.workspace.root
        async with self.sandbox.confine(mode, root, grants, reads) as confined:
            try:
                outcome = await run_shell(
                    run,
                    cwd=self.workspace.root,
                    env={**env, **confined.env},
                    time_limit=limit,
                    max_output_bytes=self.max_output_bytes,
                    spawn=confined.spawn,
                )
            except OSError as exc:  # the spawn: too big an environment, no bwrap
                raise ToolError(f"bash could not be started: {exc}") from exc
        unconfined = confined.backend is None and mode is not SandboxMode.OFF
        notes = [
            unconfined_notice(ctx.state) if unconfined else None,
            refusal_note(
                confined,
                outcome.output,
                forced=forced,
                configured=configured,
                root=self.workspace.root,
                writable=tuple(g.path for g in grants),
                readable=reads,
            ),
            restored_note(confined.restored),
        ]
        return outcome, [note for note in notes if note]


def _parse_both(command: str) -> None:
    """Fill the classifier's and the rules' parse caches for `command`."""
    parse_script(command)
    command_parts(command)


def _rules_for(command: ShellCommand) -> tuple[str, ...]:
    """Allow rules covering every command the input runs (none if unparseable).

    A command word that depends on an expansion can only be covered by a
    prefix rule of the literal words before it (``bash(echo:*)``).
    """
    parts = command.parts()
    if parts is None or not parts.exact:
        return ()
    rules: dict[str, None] = {}
    for words in parts.exact:
        if None in words:
            head = words[: words.index(None)]
            if not head:
                return ()
            rules[f"bash({' '.join(str(w) for w in head)}:*)"] = None
        else:
            rules[f"bash({' '.join(str(w) for w in words)})"] = None
    return tuple(rules)


_READ_ONLY_UNSET = frozenset({*GIT_READ_UNSET, "RIPGREP_CONFIG_PATH"})
"""Variables that could make a "read" run a configured program (rg's config may
hold ``--pre``)."""


def _read_only_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for a call judged read-only: configured programs switched off."""
    kept = {k: v for k, v in env.items() if k not in _READ_ONLY_UNSET}
    return {**kept, **git_read_env(kept)}
