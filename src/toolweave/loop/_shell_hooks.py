"""Hooks as shell commands, like Claude Code's: the input as JSON on stdin, the verdict back.

`build_shell_hooks` turns `HookSettings` (the ``[[hooks.*]]`` tables of
`toolweave.toml`, see `load_hook_settings`) into a `Hooks` registry: ``toolweave
run``, every session of ``toolweave batch`` and a library user's `AgentConfig`
run the same commands the same way.

Protocol (a subset of Claude Code's): the command runs with ``/bin/sh -c`` in
the workspace and reads one JSON object on stdin with ``hook_event_name``,
``session_id``, ``cwd``, ``tool_name``, ``tool_input``, ``tool_use_id`` (and
``tool_response`` / ``error`` after a call, ``stop_hook_active`` for Stop;
``prompt``, ``run_id`` and ``source`` ("startup" / "resume") for RunStart).

* exit 0: success. A JSON object on stdout may decide: ``hookSpecificOutput``
  with ``permissionDecision`` (allow / deny / ask), ``permissionDecisionReason``,
  ``updatedInput``, ``additionalContext``, ``updatedMCPToolOutput`` (PostToolUse
  of a tool that allows it, e.g. MCP tools: its new output); ``decision`` ("approve" / "block")
  with ``reason``; ``continue: false`` with ``stopReason``.
* RunStart (Claude Code's SessionStart): on exit 0, ``additionalContext`` in
  ``hookSpecificOutput``, or else any plain stdout, reaches the model with the
  first message; anything else is a warning, no effect.
* exit 2: blocking. PreToolUse denies the call, Stop makes the model continue,
  PostToolUse passes stderr to the model; stderr is the reason.
* anything else, a timeout, or output that is not a JSON object: for PreToolUse
  the call fails (fail closed); for the other events a warning, no effect.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from .._exceptions import ToolError
from ..execution import (
    Hooks,
    PostToolUseDecision,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreToolUseDecision,
    PreToolUseInput,
    RunStartDecision,
    RunStartInput,
    StopDecision,
    StopInput,
)
from ..messages import ToolResult
from ._hook_settings import HookCommand, HookSettings
from ._shell_verdicts import (
    HookRun,
    post_decision,
    pre_decision,
    run_start_decision,
    stop_decision,
)

__all__ = ["build_shell_hooks", "run_hook_command"]

logger = logging.getLogger("toolweave.hooks")


async def _feed(stream: ByteSendStream | None, data: bytes) -> None:
    """Write the input; a command that does not read it is fine (a closed pipe)."""
    if stream is None:
        return
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    finally:
        with contextlib.suppress(
            anyio.BrokenResourceError, anyio.ClosedResourceError, OSError
        ):
            await stream.aclose()


async def _drain(stream: ByteReceiveStream | None, into: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        into.extend(chunk)


def _kill_group(process: Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


async def run_hook_command(
    command: str, payload: Mapping[str, Any], *, cwd: Path, limit: float
) -> HookRun:
    """Run `command` with `payload` as JSON on stdin. A checkpoint.

    The command runs in its own process group, killed whole on timeout.

    Raises:
        TimeoutError: if it ran past `limit` seconds.
        OSError: if the shell could not start.
    """
    data = json.dumps(payload, ensure_ascii=False, default=repr).encode("utf-8")
    out, err = bytearray(), bytearray()
    process = await anyio.open_process(
        ["/bin/sh", "-c", command], cwd=cwd, start_new_session=True
    )
    try:
        with anyio.fail_after(limit):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_feed, process.stdin, data)
                tg.start_soon(_drain, process.stdout, out)
                tg.start_soon(_drain, process.stderr, err)
            code = await process.wait()
    finally:
        _kill_group(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return HookRun(code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))


@dataclass(frozen=True, slots=True)
class _Context:
    cwd: Path
    session_id: str
    warn: Callable[[str], None]

    def base(self, event: str) -> dict[str, Any]:
        return {
            "hook_event_name": event,
            "session_id": self.session_id,
            "cwd": str(self.cwd),
        }

    async def run(
        self, hook: HookCommand, payload: Mapping[str, Any], *, strict: bool
    ) -> HookRun | None:
        what = f"{payload['hook_event_name']} hook {hook.command!r}"
        try:
            run = await run_hook_command(
                hook.command, payload, cwd=self.cwd, limit=hook.timeout
            )
        except (TimeoutError, OSError) as exc:
            problem = f"{what} failed: {type(exc).__name__}: {exc}"
            if strict:
                raise ToolError(problem) from exc
            self.warn(problem)
            return None
        if run.code not in (0, 2):
            problem = (
                f"{what} exited with status {run.code}: {run.stderr.strip()[:500]}"
            )
            if strict:
                raise ToolError(problem)
            self.warn(problem)
            return None
        return run


def _tool_response(result: ToolResult) -> dict[str, Any]:
    return {"content": result.text, "is_error": result.is_error}


def _tool_payload(
    ctx: _Context,
    event: str,
    data: PreToolUseInput | PostToolUseInput | PostToolUseFailureInput,
) -> dict[str, Any]:
    payload = ctx.base(event)
    payload.update(
        tool_name=data.tool_name, tool_input=dict(data.input), tool_use_id=data.call.id
    )
    return payload


def _add_pre(hooks: Hooks, ctx: _Context, hook: HookCommand) -> None:
    async def pre(data: PreToolUseInput) -> PreToolUseDecision | None:
        run = await ctx.run(hook, _tool_payload(ctx, "PreToolUse", data), strict=True)
        return None if run is None else pre_decision(run)

    pre.__qualname__ = f"shell:{hook.command}"
    hooks.pre_tool_use(hook.matcher)(pre)


def _add_post(hooks: Hooks, ctx: _Context, hook: HookCommand) -> None:
    async def post(data: PostToolUseInput) -> PostToolUseDecision | None:
        payload = _tool_payload(ctx, "PostToolUse", data)
        payload["tool_response"] = _tool_response(data.result)
        run = await ctx.run(hook, payload, strict=False)
        return None if run is None else post_decision(run)

    post.__qualname__ = f"shell:{hook.command}"
    hooks.post_tool_use(hook.matcher)(post)


def _add_failure(hooks: Hooks, ctx: _Context, hook: HookCommand) -> None:
    async def failure(data: PostToolUseFailureInput) -> PostToolUseDecision | None:
        payload = _tool_payload(ctx, "PostToolUseFailure", data)
        payload["error"] = data.error
        run = await ctx.run(hook, payload, strict=False)
        return None if run is None else post_decision(run)

    failure.__qualname__ = f"shell:{hook.command}"
    hooks.post_tool_use_failure(hook.matcher)(failure)


def _add_stop(hooks: Hooks, ctx: _Context, hook: HookCommand) -> None:
    async def stop(data: StopInput) -> StopDecision | None:
        payload = ctx.base("Stop")
        payload.update(stop_hook_active=data.stop_hook_active, output=data.output)
        run = await ctx.run(hook, payload, strict=False)
        return None if run is None else stop_decision(run)

    stop.__qualname__ = f"shell:{hook.command}"
    hooks.stop(stop)


def _add_run_start(hooks: Hooks, ctx: _Context, hook: HookCommand) -> None:
    async def run_start(data: RunStartInput) -> RunStartDecision | None:
        payload = ctx.base("RunStart")
        payload.update(
            prompt=data.prompt,
            run_id=data.run_id,
            source="resume" if data.resumed else "startup",
        )
        run = await ctx.run(hook, payload, strict=False)
        if run is not None and run.code == 2:
            ctx.warn(f"RunStart hook {hook.command!r}: {run.stderr.strip()[:500]}")
        return None if run is None else run_start_decision(run)

    run_start.__qualname__ = f"shell:{hook.command}"
    hooks.run_start(run_start)


def build_shell_hooks(
    settings: HookSettings,
    *,
    cwd: Path,
    session_id: str,
    warn: Callable[[str], None] | None = None,
) -> Hooks | None:
    """A `Hooks` registry running the configured shell commands; None if there are none."""
    ctx = _Context(cwd, session_id, warn or logger.warning)
    groups: Sequence[
        tuple[tuple[HookCommand, ...], Callable[[Hooks, _Context, HookCommand], None]]
    ] = (
        (settings.PreToolUse, _add_pre),
        (settings.PostToolUse, _add_post),
        (settings.PostToolUseFailure, _add_failure),
        (settings.Stop, _add_stop),
        (settings.RunStart, _add_run_start),
    )
    if not any(commands for commands, _ in groups):
        return None
    hooks = Hooks(
        timeout=None
    )  # each command has its own timeout (HookCommand.timeout)
    for commands, add in groups:
        for hook in commands:
            add(hooks, ctx, hook)
    return hooks
