"""ForeignScheduler: a framework's batch of tool calls, run on toolweave's schedule.

Each call becomes a `ToolCall` the Dispatcher schedules and the `ToolRunner`
runs (hooks, permissions, timeouts, audit); the tool it runs is a stand-in
whose work is the framework's own execution of that call, so the framework's
validation, injection and error handling stay exactly as they were.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar, Unpack, final

from pydantic import BaseModel, ConfigDict

from .._exceptions import ToolError, ToolInputError
from .._native.cancel import cancelled_from_outside, is_cancellation
from ..execution import (
    ExecutionConfig,
    LifecycleKeywords,
    RunnerOptions,
    ToolRunner,
)
from ..messages import ToolCall, ToolResult
from ..scheduling import ConcurrencyConfig, Dispatcher, InterruptToken, classify
from ..tools import Access, SessionState, Tool, ToolContext, ToolRegistry
from ._declaration import UNDECLARED, Declaration, Declarations

__all__ = ["ForeignCall", "ForeignScheduler", "Outcome", "Raised"]

T = TypeVar("T")

_NO_TIMEOUT = ExecutionConfig(default_timeout=None)


class ForeignCall(NamedTuple):
    """One framework tool call: its id, tool name and raw arguments."""

    id: str
    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Raised:
    """The framework's value said the call failed: `text` for toolweave's result."""

    text: str


@dataclass(slots=True)
class Outcome(Generic[T]):
    """How one call ended: the framework's own value if it produced one, and the result.

    `value` is set when the framework's execution returned (success or an error
    it handled itself); None when it raised or never ran (interrupted, denied,
    timed out): then `result` (an error) says why. Read-only once made (not
    frozen only because one is made per call, and frozen construction costs).
    """

    value: T | None
    result: ToolResult
    ran: bool = False


class _AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


@dataclass(slots=True)
class _Batch:
    invoke: Callable[[int, Mapping[str, Any]], Awaitable[Any]]
    describe: Callable[[Any], str | Raised]
    passthrough: tuple[type[BaseException], ...]
    recover: Callable[[int, Exception], Any] | None
    values: dict[int, Any] = field(default_factory=dict)
    raised: dict[int, BaseException] = field(default_factory=dict)


_CURRENT: ContextVar[_Batch] = ContextVar("toolweave_foreign_batch")


class _StandIn(Tool):
    """Declares what the framework's tool was declared to be; runs the framework's call."""

    def __init__(self, name: str, declaration: Declaration) -> None:
        super().__init__(
            name=name,
            description=f"framework tool {name!r}",
            input_model=_AnyArgs,
            concurrency=declaration.concurrency,
            access=declaration.access,
            interrupt=declaration.interrupt,
            timeout=declaration.timeout,
            max_result_chars=None,  # the framework's message is the result
        )

    def parse(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Any mapping: the framework validates the arguments itself."""
        if type(raw) is not dict and not isinstance(raw, Mapping):
            raise ToolInputError(f"arguments of {self.name!r} must be an object")
        return dict(raw)

    def call(self, args: dict[str, Any], ctx: ToolContext) -> Coroutine[Any, Any, str]:
        """Run the framework's execution of this call; keep its value."""
        return _framework_text(_CURRENT.get(), ctx.call, args)


async def _framework_text(
    batch: _Batch, call: ToolCall, args: Mapping[str, Any]
) -> str:
    """The framework's execution of `call`: keeps its value, returns its text.

    Raises ToolError when the value is the framework's own error answer, or
    when the execution raised a passthrough exception (kept to re-raise). A
    cancellation exception the execution raised by itself (nothing cancelled
    it) is always passed through: each framework has its own answer to a tool
    that raises `CancelledError` (the SDK's failure function, `ToolNode`
    failing the graph, PydanticAI aborting the run), and toolweave's own
    ("raised by the tool itself") would stand in for it.
    """
    index = int(call.key[2:])  # `run` keys each call 0.<its index>
    try:
        value = await batch.invoke(index, args)
    except batch.passthrough as exc:
        raise _held(batch, index, exc) from None
    except Exception as exc:
        if batch.recover is None:
            raise
        try:
            value = batch.recover(index, exc)
        except batch.passthrough as again:
            raise _held(batch, index, again) from None
    except BaseException as exc:
        if is_cancellation(exc) and not cancelled_from_outside():
            raise _held(batch, index, exc) from None
        raise
    batch.values[index] = value
    described = batch.describe(value)
    if isinstance(described, Raised):
        raise ToolError(described.text)
    return described


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None elsewhere (trio), where nothing is lent."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _held(batch: _Batch, index: int, exc: BaseException) -> ToolError:
    """Keep `exc` (a passthrough) to re-raise after the batch; the call's error."""
    batch.raised[index] = exc
    return ToolError(f"{type(exc).__name__} raised by the tool")


@final
class ForeignScheduler:
    """Runs batches of one framework's tool calls on toolweave's schedule.

    `declarations` maps tool names to `Declaration`s (undeclared = a barrier).
    Every call gets an `Outcome`, in call order, whatever order they finished
    in; a call that raised, was denied, timed out or never ran (interrupt) has
    no value and an error result. Exceptions of a `passthrough` type (a
    framework's control flow, like LangGraph's interrupt), and cancellation
    exceptions a framework's execution raised by itself, are re-raised after
    every sibling is answered, the first in call order.
    """

    def __init__(
        self,
        declarations: Declarations | None = None,
        *,
        config: ConcurrencyConfig | None = None,
        dispatcher: Dispatcher | None = None,
        state: SessionState | None = None,
        **lifecycle: Unpack[LifecycleKeywords],
    ) -> None:
        self._declarations = dict(declarations or {})
        self._config = config or ConcurrencyConfig()
        self._dispatcher = dispatcher
        # the framework's timeout is the declaration's (the stand-in's own)
        self._runner_options = RunnerOptions(config=_NO_TIMEOUT, **lifecycle)
        self._state = state or SessionState()
        self._tools: dict[str, Tool] = {
            name: _StandIn(name, d) for name, d in self._declarations.items()
        }
        self._registry = ToolRegistry(self._tools.values())
        self._runner: ToolRunner | None = None
        # a Dispatcher a finished batch left idle, with the loop it belongs to
        self._spare: (
            tuple[weakref.ref[asyncio.AbstractEventLoop], Dispatcher] | None
        ) = None

    def _spare_dispatcher(self, loop: asyncio.AbstractEventLoop | None) -> Dispatcher:
        """A Dispatcher no other batch is using, on `loop` (the running one).

        Without a shared `dispatcher` each batch has its own host cap, as if it
        had a Dispatcher of its own; one that finished a batch on this loop is
        lent again rather than built anew (a Dispatcher is loop-bound, and
        building one was a measurable share of a small batch). Lent, it keeps
        its count of abandoned worker threads (still running), which a new
        one would forget.
        """
        spare, self._spare = self._spare, None
        if spare is not None and loop is not None and spare[0]() is loop:
            return spare[1]
        return Dispatcher(self._config)

    def declaration(self, name: str) -> Declaration:
        """The declaration calls of `name` are scheduled by (`UNDECLARED` if none)."""
        return self._declarations.get(name, UNDECLARED)

    @property
    def batch_cap(self) -> int:
        """The most calls of one batch that run at once (`ConcurrencyConfig.batch_cap`)."""
        return self._config.batch_cap

    def access_of(self, name: str, args: Mapping[str, Any]) -> Access:
        """What a call of `name` conflicts on when its batch is admitted call by call.

        The gate's verdict for the call (`classify`), read the way this
        scheduler's policy reads it: under ``conflict`` the call's access; under
        the others a parallel-ok call shares (reads everything) and any other
        is a barrier; with scheduling disabled every call is a barrier. A call
        that provably runs nothing touches nothing.
        """
        plan = classify(ToolCall("", name, args), self.registry_for((name,)))
        if plan.runs_nothing:
            return plan.access
        if not self._config.enabled:
            return Access.barrier()
        if self._config.policy == "conflict":
            return plan.access
        return Access.read_all() if plan.parallel_ok else Access.barrier()

    def _runner_for(self, registry: ToolRegistry) -> ToolRunner:
        """The lifecycle runner; built once for the declared tools' registry."""
        options = self._runner_options
        if registry is not self._registry:
            return ToolRunner(registry, state=self._state, options=options)
        if self._runner is None:
            self._runner = ToolRunner(registry, state=self._state, options=options)
        return self._runner

    def registry_for(self, names: Iterable[str]) -> ToolRegistry:
        """A registry holding a stand-in for each of `names` (undeclared ones too)."""
        missing = {name for name in names if name not in self._tools}
        if not missing:
            return self._registry
        extra = [_StandIn(name, UNDECLARED) for name in sorted(missing)]
        return ToolRegistry([*self._tools.values(), *extra])

    async def run(
        self,
        calls: Sequence[tuple[str, str, Mapping[str, Any]]],
        invoke: Callable[[int, Mapping[str, Any]], Awaitable[T]],
        describe: Callable[[T], str | Raised],
        *,
        passthrough: tuple[type[BaseException], ...] = (),
        interrupt: InterruptToken | None = None,
        recover: Callable[[int, Exception], T] | None = None,
    ) -> list[Outcome[T]]:
        """Run `calls` (`ForeignCall`s, or plain tuples of the same three fields).

        `invoke(index, args)` is the framework's own execution of one.

        `describe(value)` gives the text of a value for toolweave's result (hooks
        and events see it), or `Raised` when the value is the framework's own
        error answer. `recover(index, exc)`, if given, is the framework's value
        for an exception (not a `passthrough` one) its execution raised; it may
        raise a passthrough exception itself. With it, `invoke` need not be a
        coroutine of its own that catches them: it may return the framework's
        awaitable directly (one coroutine fewer per call). Checkpoint: always.
        Cancelling the caller cancels every call and re-raises.
        """
        registry = self.registry_for({c[1] for c in calls})
        batch = _Batch(invoke, describe, passthrough, recover)
        runner = self._runner_for(registry)
        tw_calls = [
            ToolCall(id, name, args, key=f"0.{i}")
            for i, (id, name, args) in enumerate(calls)
        ]
        token = _CURRENT.set(batch)
        try:
            if len(tw_calls) == 1 and interrupt is None and self._dispatcher is None:
                # Nothing to schedule: the lifecycle alone (it never raises but
                # cancellation), as the Dispatcher's one-call path would run it.
                results = [await runner(tw_calls[0])]
            elif self._dispatcher is not None:
                results = await self._dispatcher.dispatch(
                    tw_calls, registry, runner, interrupt=interrupt
                )
            else:
                loop = _running_loop()
                dispatcher = self._spare_dispatcher(loop)
                results = await dispatcher.dispatch(
                    tw_calls, registry, runner, interrupt=interrupt
                )
                if loop is not None:
                    self._spare = (weakref.ref(loop), dispatcher)
        finally:
            # ValueError: closed outside the context it ran in (a never-finished
            # call's coroutine closed by the loop's shutdown or the collector);
            # the variable was set in that other context only, nothing to undo.
            with contextlib.suppress(ValueError):
                _CURRENT.reset(token)
        if batch.raised:
            raise batch.raised[min(batch.raised)]
        values = batch.values
        return [
            Outcome(values.get(i), r, ran=i in values) for i, r in enumerate(results)
        ]
