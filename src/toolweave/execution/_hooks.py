"""Hooks: user callables run when a run starts, around tool calls, and when the model stops."""

from __future__ import annotations

import fnmatch
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeAlias, TypeVar, cast, final, overload

import anyio

from ..messages import ToolCall, ToolResult
from ._run_start import RunStartDecision, RunStartHook, RunStartInput, RunStartOutcome

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "HookPermission",
    "Hooks",
    "PostToolUseDecision",
    "PostToolUseFailureHook",
    "PostToolUseFailureInput",
    "PostToolUseHook",
    "PostToolUseInput",
    "PreToolUseDecision",
    "PreToolUseHook",
    "PreToolUseInput",
    "StopDecision",
    "StopHook",
    "StopInput",
    "call_hook",
    "hook_name",
]

logger = logging.getLogger("toolweave.execution")

HookPermission: TypeAlias = Literal["allow", "deny", "ask"]
"""A PreToolUse hook's permission opinion."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreToolUseInput:
    """What a PreToolUse hook sees: the call, after its input was validated."""

    call: ToolCall
    """The call as the model wrote it."""
    tool_name: str
    """The resolved tool's name (an alias in the call is resolved)."""
    input: Mapping[str, object]
    """The validated input (after any earlier hook's rewrite)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PreToolUseDecision:
    """A PreToolUse hook's answer. Every field is optional; the default changes nothing."""

    updated_input: Mapping[str, object] | None = None
    """A new raw input for the call; it is validated again like the model's."""
    permission: HookPermission | None = None
    """allow / deny / ask. An allow never beats a deny or ask rule."""
    reason: str = ""
    """Why; shown to the model on deny, to the ask handler on ask."""
    additional_context: str | None = None
    """Text for the model, delivered with the batch (`BatchSignals`)."""
    prevent_continuation: bool = False
    """Stop the run after this batch (the call itself still runs unless denied)."""
    stop_reason: str = ""
    """Why the run stops, when `prevent_continuation`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseInput:
    """What a PostToolUse hook sees: a call that ran and succeeded."""

    call: ToolCall
    """The call as the model wrote it."""
    tool_name: str
    """The resolved tool's name."""
    input: Mapping[str, object]
    """The input the tool ran with."""
    output: object
    """The raw output, as the tool returned it (a `ToolOutput` unwrapped)."""
    result: ToolResult
    """The result as the model would see it (mapped, maybe persisted)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseFailureInput:
    """What a PostToolUseFailure hook sees: a call that ran and failed or timed out."""

    call: ToolCall
    """The call as the model wrote it."""
    tool_name: str
    """The resolved tool's name."""
    input: Mapping[str, object]
    """The input the tool ran with."""
    error: str
    """What went wrong, as the model will read it."""
    result: ToolResult
    """The error result."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseDecision:
    """A PostToolUse(Failure) hook's answer; the default changes nothing."""

    additional_context: str | None = None
    """Text for the model, delivered with the batch (`BatchSignals`)."""
    prevent_continuation: bool = False
    """Stop the run after this batch."""
    stop_reason: str = ""
    """Why the run stops, when `prevent_continuation`."""
    replace_output: object = None
    """New output for the call (None = keep). Honoured only after a success and
    only for tools declaring ``replaceable_output=True``; otherwise ignored with
    a `Warning` event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopInput:
    """What a stop hook sees: the model gave a final answer (as in Claude Code)."""

    output: str
    """The final answer's text."""
    stop_hook_active: bool = False
    """True if the run is already continuing because a stop hook blocked before;
    check it to avoid blocking forever."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StopDecision:
    """Returned by a stop hook to keep the run going."""

    reason: str
    """Why the run must continue; the loop sends it to the model."""


_D = TypeVar("_D")
_H = TypeVar("_H")
PreToolUseHook: TypeAlias = Callable[
    [PreToolUseInput], PreToolUseDecision | Awaitable[PreToolUseDecision | None] | None
]
PostToolUseHook: TypeAlias = Callable[
    [PostToolUseInput],
    PostToolUseDecision | Awaitable[PostToolUseDecision | None] | None,
]
PostToolUseFailureHook: TypeAlias = Callable[
    [PostToolUseFailureInput],
    PostToolUseDecision | Awaitable[PostToolUseDecision | None] | None,
]
StopHook: TypeAlias = Callable[
    [StopInput], StopDecision | Awaitable[StopDecision | None] | None
]

_Pre = TypeVar("_Pre", bound=PreToolUseHook)
_Post = TypeVar("_Post", bound=PostToolUseHook)
_Fail = TypeVar("_Fail", bound=PostToolUseFailureHook)
_Stop = TypeVar("_Stop", bound=StopHook)
_Start = TypeVar("_Start", bound=RunStartHook)

DEFAULT_HOOK_TIMEOUT = 60.0
"""Seconds a hook may run unless `Hooks(timeout=...)` says otherwise."""


def hook_name(fn: object) -> str:
    """A readable name for a hook, for logs and error results (no ``<locals>`` path)."""
    name = str(getattr(fn, "__qualname__", None) or repr(fn))
    return name.rsplit("<locals>.", 1)[-1]


async def call_hook(fn: Callable[[_D], object], data: _D) -> object:
    """Call a sync or async hook and return what it returned.

    A sync hook runs inline on the event-loop thread (it must not block); an
    async hook is awaited (a checkpoint if it awaits). Exceptions propagate.
    """
    result = fn(data)
    if inspect.isawaitable(result):
        result = await result
    return result


def _matches(pattern: str, names: tuple[str, ...]) -> bool:
    pattern = pattern.lower()
    return any(fnmatch.fnmatchcase(name.lower(), pattern) for name in names)


class _HookList(Generic[_H]):
    """Hooks of one kind with their matchers; lookups are cached per tool."""

    __slots__ = ("_cache", "_entries")

    def __init__(self) -> None:
        self._entries: list[tuple[str, _H]] = []
        self._cache: dict[tuple[str, ...], tuple[_H, ...]] = {}

    def add(self, matcher: str, fn: _H) -> None:
        if not callable(fn):
            raise TypeError(f"a hook must be callable, got {fn!r}")
        self._entries.append((matcher, fn))
        self._cache.clear()

    def matching(self, names: tuple[str, ...]) -> tuple[_H, ...]:
        found = self._cache.get(names)
        if found is None:
            found = tuple(f for m, f in self._entries if _matches(m, names))
            self._cache[names] = found
        return found

    def __len__(self) -> int:
        return len(self._entries)


@final
class Hooks:
    """A registry of hooks, matched by tool-name pattern.

    Matchers are fnmatch patterns (``"*"``, ``"bash"``, ``"mcp__git__*"``),
    compared case-insensitively with the tool's name and its aliases. Matching
    hooks of one call run one after another, in registration order; hooks of
    *different* calls in a parallel batch run concurrently (interleaved on the
    event-loop thread), so a hook that keeps state must guard it. A hook that
    raises, or returns something other than its decision type or None, fails
    that call with an error result and is logged; the batch goes on.

    Every hook is bounded by `timeout` seconds (default 60, as Claude Code's
    hooks; None = no limit): one still running then is stopped and counts as a
    hook that raised ``TimeoutError``, so no hook can hang a call, an
    interrupt of a BLOCK call, or the run's wall-clock budget. A *sync* hook
    runs inline and cannot be stopped mid-way: keep it short.

    Register with decorators, bare or with a matcher::

        hooks = Hooks()

        @hooks.pre_tool_use("bash")
        async def no_rm(data: PreToolUseInput) -> PreToolUseDecision | None:
            if "rm " in data.input["command"]:
                return PreToolUseDecision(permission="deny", reason="no rm")
            return None
    """

    def __init__(self, *, timeout: float | None = DEFAULT_HOOK_TIMEOUT) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive or None, got {timeout}")
        self.timeout = timeout
        """Seconds one hook may run; None = no limit. Applies to hooks registered after."""
        self._pre: _HookList[PreToolUseHook] = _HookList()
        self._post: _HookList[PostToolUseHook] = _HookList()
        self._failure: _HookList[PostToolUseFailureHook] = _HookList()
        self._stop: list[StopHook] = []
        self._run_start: list[RunStartHook] = []

    def _bounded(self, fn: _H) -> _H:
        """`fn` stopped after `timeout` seconds with ``TimeoutError`` (itself if no limit)."""
        if not callable(fn):
            raise TypeError(f"a hook must be callable, got {fn!r}")
        limit = self.timeout
        if limit is None:
            return fn
        hook = cast("Callable[[object], object]", fn)

        @functools.wraps(hook)
        async def bounded(data: object) -> object:
            with anyio.move_on_after(limit):
                return await call_hook(hook, data)
            raise TimeoutError(f"the hook did not return within {limit:g} s")

        return cast("_H", bounded)

    @overload
    def pre_tool_use(self, matcher: _Pre, /) -> _Pre: ...
    @overload
    def pre_tool_use(self, matcher: str = "*", /) -> Callable[[_Pre], _Pre]: ...
    def pre_tool_use(
        self, matcher: str | _Pre = "*", /
    ) -> _Pre | Callable[[_Pre], _Pre]:
        """Register a hook run before calls of matching tools (after validation)."""
        if not isinstance(matcher, str):
            self._pre.add("*", self._bounded(matcher))
            return matcher

        def register(fn: _Pre) -> _Pre:
            self._pre.add(matcher, self._bounded(fn))
            return fn

        return register

    @overload
    def post_tool_use(self, matcher: _Post, /) -> _Post: ...
    @overload
    def post_tool_use(self, matcher: str = "*", /) -> Callable[[_Post], _Post]: ...
    def post_tool_use(
        self, matcher: str | _Post = "*", /
    ) -> _Post | Callable[[_Post], _Post]:
        """Register a hook run after successful calls of matching tools."""
        if not isinstance(matcher, str):
            self._post.add("*", self._bounded(matcher))
            return matcher

        def register(fn: _Post) -> _Post:
            self._post.add(matcher, self._bounded(fn))
            return fn

        return register

    @overload
    def post_tool_use_failure(self, matcher: _Fail, /) -> _Fail: ...
    @overload
    def post_tool_use_failure(
        self, matcher: str = "*", /
    ) -> Callable[[_Fail], _Fail]: ...
    def post_tool_use_failure(
        self, matcher: str | _Fail = "*", /
    ) -> _Fail | Callable[[_Fail], _Fail]:
        """Register a hook run after calls of matching tools that ran and failed."""
        if not isinstance(matcher, str):
            self._failure.add("*", self._bounded(matcher))
            return matcher

        def register(fn: _Fail) -> _Fail:
            self._failure.add(matcher, self._bounded(fn))
            return fn

        return register

    @overload
    def stop(self, fn: _Stop, /) -> _Stop: ...
    @overload
    def stop(self, fn: None = None, /) -> Callable[[_Stop], _Stop]: ...
    def stop(self, fn: _Stop | None = None, /) -> _Stop | Callable[[_Stop], _Stop]:
        """Register a stop hook, bare (``@hooks.stop``) or called (``@hooks.stop()``)."""
        if fn is not None:
            self._stop.append(self._bounded(fn))
            return fn

        def register(func: _Stop) -> _Stop:
            self._stop.append(self._bounded(func))
            return func

        return register

    @overload
    def run_start(self, fn: _Start, /) -> _Start: ...
    @overload
    def run_start(self, fn: None = None, /) -> Callable[[_Start], _Start]: ...
    def run_start(
        self, fn: _Start | None = None, /
    ) -> _Start | Callable[[_Start], _Start]:
        """Register a hook run once when a run starts, before its first model call.

        Bare (``@hooks.run_start``) or called (``@hooks.run_start()``). Its
        `RunStartDecision.additional_context` reaches the model with the first
        message (Claude Code's SessionStart).
        """
        if fn is not None:
            self._run_start.append(self._bounded(fn))
            return fn

        def register(func: _Start) -> _Start:
            self._run_start.append(self._bounded(func))
            return func

        return register

    async def run_run_start_hooks(self, data: RunStartInput) -> RunStartOutcome:
        """Run every RunStart hook in registration order and collect their context.

        A hook that raises, or returns something other than a
        `RunStartDecision` or None, is logged, named in `problems` and
        otherwise ignored: adding context is best effort, it never fails the
        run. Cancellation propagates.
        """
        contexts: list[str] = []
        problems: list[str] = []
        for fn in self._run_start:
            try:
                verdict = await call_hook(fn, data)
            except Exception as exc:
                logger.exception("RunStart hook %s raised; ignored", hook_name(fn))
                problems.append(
                    f"RunStart hook {hook_name(fn)} raised {exc!r}; ignored"
                )
                continue
            if isinstance(verdict, RunStartDecision):
                if verdict.additional_context:
                    contexts.append(verdict.additional_context)
            elif verdict is not None:
                problems.append(
                    f"RunStart hook {hook_name(fn)} returned {verdict!r}; ignored"
                )
        return RunStartOutcome(tuple(contexts), tuple(problems))

    @property
    def has_run_start_hooks(self) -> bool:
        """True if any RunStart hook is registered."""
        return bool(self._run_start)

    def pre_hooks_for(self, names: tuple[str, ...]) -> tuple[PreToolUseHook, ...]:
        """PreToolUse hooks matching any of `names` (a tool's name and aliases), in order."""
        return self._pre.matching(names)

    def post_hooks_for(self, names: tuple[str, ...]) -> tuple[PostToolUseHook, ...]:
        """PostToolUse hooks matching any of `names`, in order."""
        return self._post.matching(names)

    def failure_hooks_for(
        self, names: tuple[str, ...]
    ) -> tuple[PostToolUseFailureHook, ...]:
        """PostToolUseFailure hooks matching any of `names`, in order."""
        return self._failure.matching(names)

    async def run_stop_hooks(self, data: StopInput) -> StopDecision | None:
        """Run every stop hook in registration order; None means the run may stop.

        If any hook returns a `StopDecision`, the reasons of all blocking hooks are
        joined (one per line) into the returned decision: the loop must then send
        that reason to the model and continue, with ``stop_hook_active=True`` next
        time. A hook that raises or returns anything else is logged and counts as
        no objection (stopping is the side-effect-free direction).
        """
        reasons: list[str] = []
        for fn in self._stop:
            try:
                verdict = await call_hook(fn, data)
            except Exception:
                logger.exception("stop hook %s raised; ignored", hook_name(fn))
                continue
            if isinstance(verdict, StopDecision):
                reasons.append(verdict.reason)
            elif verdict is not None:
                logger.error(
                    "stop hook %s returned %r; ignored", hook_name(fn), verdict
                )
        return StopDecision(reason="\n".join(reasons)) if reasons else None

    @property
    def has_tool_hooks(self) -> bool:
        """True if any PreToolUse, PostToolUse or PostToolUseFailure hook is registered."""
        return bool(len(self._pre) or len(self._post) or len(self._failure))

    @property
    def tool_hook_count(self) -> int:
        """PreToolUse, PostToolUse and PostToolUseFailure hooks registered so far.

        Hooks are only ever added, so a runner that planned its calls at one
        count knows its plans are stale once the count moved.
        """
        return len(self._pre) + len(self._post) + len(self._failure)
