"""Agent: a model, tools and a config; every run goes through the one loop."""

from __future__ import annotations

import asyncio
import contextlib
import math
import shutil
import tempfile
import uuid
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import final

import anyio
import sniffio

from .._exceptions import UsageError
from ..events import Event
from ..messages import Message
from ..models import Model, RetryingModel, ToolDefinition, resolve_model
from ..scheduling import Dispatcher
from ..sessions import SessionRecorder, Suspension
from ..tools import SessionState, ToolLike, ToolRegistry, sandbox_mode
from ._config import AgentConfig
from ._cost import PriceTable
from ._loop import RunLoop
from ._result import RunResult
from ._run import AgentRun
from ._run_wiring import abandoned_because, emitter, history_for, stopper
from ._setup import RunSetup
from ._suspended import Resumption, resumption
from ._tokens import DefinitionsEstimate

__all__ = ["Agent"]


@final
class Agent:
    """A model with tools, run as a ReAct loop.

    `run_stream` yields the events of a run; `run` and `run_sync` drain the
    same events and return the `RunResult`; `open_run` gives a handle for
    interrupts and steering. All of them drive the one loop (`RunLoop`). An
    Agent may run many times, even concurrently; the session state (read
    ledger, tool values) is shared by its runs.

    Args:
        model: A Model, or ``"anthropic:<name>"`` / ``"openai:<name>"``.
        tools: Tools, plain functions (made tools by `@tool` with its
            defaults), or a ToolRegistry.
        system: The system prompt.
        config: Budgets, guards, hooks, context, cost, tracing.
        name: The agent's name (in traces).
        state: Session state shared with other agents; None = a new one.

    Large tool results are saved under the session's results directory: the
    given state's, else ``config.results_dir``, else a temporary directory this
    Agent owns (see `results_dir`).
    """

    def __init__(
        self,
        model: Model | str,
        tools: Iterable[ToolLike] | ToolRegistry = (),
        *,
        system: str | None = None,
        config: AgentConfig | None = None,
        name: str = "agent",
        state: SessionState | None = None,
    ) -> None:
        self.config = config or AgentConfig()
        """The configuration."""
        self.model = resolve_model(model)
        """The model."""

        self.registry = (
            tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        )
        """The tools."""
        if self.config.read_only_commands:
            from ..tools.builtin import BashTool  # only then: keeps the import light

            for tool in self.registry:
                if isinstance(tool, BashTool):
                    tool.teach(self.config.read_only_commands)
        self.system = system
        """The system prompt."""
        self.name = name
        """The agent's name."""
        sandbox = self.config.sandbox
        self.state = state or SessionState(
            workspace=self.config.workspace,
            sandbox=None if sandbox is None else sandbox_mode(sandbox),
        )
        """Session state shared by this agent's runs (a given one keeps its sandbox)."""
        self._results_cleanup: Callable[[], object] | None = None
        if self.state.results_dir is None:
            self.state.results_dir = self.config.results_dir or self._temporary_dir()
        compaction = self.config.compaction_model
        self._fallbacks = tuple(resolve_model(m) for m in self.config.fallback_models)
        summariser = self.model if compaction is None else resolve_model(compaction)
        self._compaction_model = RetryingModel(summariser, policy=self.config.retry)
        specs = (model, *self.config.fallback_models, compaction)
        resolved = (self.model, *self._fallbacks, summariser)
        self._owned = [
            m for spec, m in zip(specs, resolved, strict=True) if isinstance(spec, str)
        ]
        self._prices = self.config.prices or PriceTable()
        self._definitions = DefinitionsEstimate()

    def _temporary_dir(self) -> Path:
        """A private temporary results directory, removed with this Agent."""
        path = Path(tempfile.mkdtemp(prefix="toolweave-results-"))
        self._results_cleanup = weakref.finalize(
            self, shutil.rmtree, path, ignore_errors=True
        )
        return path

    @property
    def results_dir(self) -> Path | None:
        """Where large tool results of this agent's runs are saved.

        Lifetime: a directory from ``config.results_dir`` (or the given state) is
        the caller's and is never removed; the temporary one made when neither
        names one lives as long as this Agent: `aclose` removes it, and so do
        garbage collection and interpreter exit, whichever comes first.
        """
        return self.state.results_dir

    async def aclose(self) -> None:
        """Close the models this agent created from spec strings (their HTTP clients).

        Also removes the temporary results directory, if this Agent made one
        (saved results are gone after this). Models passed in as objects are the
        caller's to close. Idempotent.
        """
        if self._results_cleanup is not None:
            self._results_cleanup()
        owned, self._owned = self._owned, []
        for model in owned:
            await model.aclose()

    def _setup(self) -> RunSetup:
        tool_defs = tuple(
            ToolDefinition(t.name, t.description, t.input_schema())
            for t in self.registry.visible()
        )
        return RunSetup(
            name=self.name,
            model=self.model,
            compaction_model=self._compaction_model,
            fallbacks=self._fallbacks,
            registry=self.registry,
            tool_defs=tool_defs,
            system=self.system,
            config=self.config,
            prices=self._prices,
            state=self.state,
            definitions=self._definitions,
        )

    @asynccontextmanager
    async def open_run(
        self,
        prompt: str,
        *,
        history: Sequence[Message] = (),
        recorder: SessionRecorder | None = None,
        _resume: Resumption | None = None,
    ) -> AsyncIterator[AgentRun]:
        """Start a run and yield its handle; the block waits for the run to end.

        Leaving the block before the run ended interrupts it (gracefully, see
        `AgentRun.interrupt`) and waits; an exception in the block cancels it.

        With a `recorder`, the run is recorded as it goes (`SessionRecorder.recording`
        with the start barrier): every event is handed to it in order as it is
        emitted, its writes go to the store off the event loop, and no tool call
        starts before its start is durable. If the store cannot be written the
        run ends as ERROR, saying so, rather than run on unrecorded. Leaving the
        block by an exception (a cancel, the consumer failing) records the run
        as abandoned at that point. Without one, nothing of this costs anything.

        Args:
            prompt: The user's message.
            history: Earlier messages to continue from (a resumed session).
            recorder: Records the run in a session store (one run per recorder).

        Raises:
            UsageError: if `history` is not a valid transcript.
            SessionBusyError: the recorder's session is held by another live owner.
            StoreError: the recorder's store could not be opened for the run.
        """
        history = history_for(history, _resume, claim=recorder is None)
        send, receive = anyio.create_memory_object_stream[Event](math.inf)
        dispatcher = self.config.dispatcher or Dispatcher(self.config.concurrency)
        owned = self.config.dispatcher is None
        loop = RunLoop(
            self._setup(),
            prompt=prompt,
            history=history,
            emit=emitter(send, recorder),
            dispatcher=dispatcher,
            run_id=uuid.uuid4().hex,
            before_start=None if recorder is None else recorder.before_start,
            resume=_resume,
        )
        run = AgentRun(loop, receive)
        async with contextlib.AsyncExitStack() as stack:
            if recorder is not None:
                try:
                    await stack.enter_async_context(
                        recorder.recording(
                            write_ahead=True, on_failure=stopper(loop.control)
                        )
                    )
                    if _resume is not None:  # taken only now: a busy session
                        _resume.suspension.claim()  # leaves it resumable
                except BaseException:  # busy, its store failed, or resumed already
                    send.close()
                    receive.close()
                    if owned:
                        with anyio.CancelScope(shield=True):
                            await dispatcher.aclose()
                    raise
                # the calls' idempotency keys name the stored session and run
                loop.state.call_scope = f"{recorder.session_id}/{recorder.run_number}"
            with receive:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run._drive, send, dispatcher if owned else None)
                    try:
                        yield run
                    except BaseException as exc:
                        if recorder is not None:
                            recorder.abandon(abandoned_because(exc))
                        tg.cancel_scope.cancel()
                        raise
                    if not run.done:
                        run.interrupt()
        if run.fatal is not None:
            raise run.fatal  # a tool's KeyboardInterrupt/SystemExit, as itself

    @asynccontextmanager
    async def open_resume(
        self,
        suspension: Suspension,
        decisions: Mapping[str, str],
        *,
        recorder: SessionRecorder | None = None,
    ) -> AsyncIterator[AgentRun]:
        """`open_run` for a suspended run: continue it with a person's `decisions`.

        The suspended batch goes on where it stopped: its calls that ran keep
        their results (never run again); each waiting call runs in its serial
        place under its decision (``"allow"``; ``"always"``, which also approves
        such calls for the rest of the session; ``"deny"``, answered with the
        denial); calls held behind them run as usual (one that asks suspends
        the run again). Then the loop goes on. With a `recorder`, the resumed
        run is recorded in the same session (take the lease with
        `prepare_resume`, whose plan holds the stored `Suspension`).

        Raises:
            UsageError: a decision is missing, unknown or for a call that does
                not wait; or this suspension was resumed already.
            SessionBusyError: the recorder's session is held by another live owner.
        """
        plan = resumption(suspension, decisions)
        if suspension._claimed:  # fail before anything starts (claimed again below)
            suspension.claim()
        async with self.open_run("", recorder=recorder, _resume=plan) as run:
            yield run

    async def resume(
        self,
        suspension: Suspension,
        decisions: Mapping[str, str],
        *,
        recorder: SessionRecorder | None = None,
    ) -> RunResult:
        """Continue a suspended run with `decisions` and return its result (see `open_resume`).

        `suspension`: ``result.suspension`` of the run that suspended, or
        ``prepare_resume(store, id).suspension`` in another process.
        `decisions`: by call key (`PendingApproval.key`), one of ``"allow"``,
        ``"deny"``, ``"always"`` for every pending call.
        """
        async with self.open_resume(suspension, decisions, recorder=recorder) as run:
            result = await run.wait()
            async for _ in run.events():
                pass
        return result

    async def run_stream(
        self,
        prompt: str,
        *,
        history: Sequence[Message] = (),
        recorder: SessionRecorder | None = None,
    ) -> AsyncIterator[Event]:
        """Yield every event of a run, ending with `RunFinished`.

        Iterate it to the end, or close it (``contextlib.aclosing``) when you stop
        early: closing interrupts the run and waits for it to end cleanly.
        `recorder`: as in `open_run`.
        """
        async with (
            self.open_run(prompt, history=history, recorder=recorder) as run,
            contextlib.aclosing(run.events()) as events,
        ):
            async for event in events:
                yield event

    async def run(
        self,
        prompt: str,
        *,
        history: Sequence[Message] = (),
        recorder: SessionRecorder | None = None,
    ) -> RunResult:
        """Run to the end and return the result (drains the run's events).

        The events are buffered while the run goes and drained once it ended,
        so no consumer task has to wake for each of them. `recorder`: as in
        `open_run` (check its `failure` afterwards if the record matters).
        """
        async with self.open_run(prompt, history=history, recorder=recorder) as run:
            result = await run.wait()
            async for _ in run.events():
                pass
        return result

    def run_sync(
        self,
        prompt: str,
        *,
        history: Sequence[Message] = (),
        backend: str = "asyncio",
        recorder: SessionRecorder | None = None,
    ) -> RunResult:
        """`run` from synchronous code, in a new event loop (`anyio.run`).

        The HTTP clients of the models this agent created are closed before that
        loop ends (they are rebuilt on the next use), so calling `run_sync` again
        never touches a client bound to a loop that is gone.

        Raises:
            UsageError: called where an event loop is running (async code, a
                notebook): there, ``await agent.run(...)``.
        """
        _refuse_inside_a_loop()

        async def run_once() -> RunResult:
            try:
                return await self.run(prompt, history=history, recorder=recorder)
            finally:
                for model in self._owned:
                    await model.aclose()

        return anyio.run(run_once, backend=backend)


def _refuse_inside_a_loop() -> None:
    """Raise `UsageError` if this thread runs an event loop (asyncio or trio).

    A loop cannot start inside another: without this, asyncio says only
    "cannot be called from a running event loop" and leaves a coroutine never
    awaited.
    """
    try:
        library: str | None = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library is None:
        try:
            asyncio.get_running_loop()
            library = "asyncio"
        except RuntimeError:
            return
    raise UsageError(
        f"Agent.run_sync() was called inside a running {library} event loop;"
        " run_sync starts a loop of its own, and a loop cannot run inside"
        " another. Use `await agent.run(...)` there (in a notebook too)."
    )
