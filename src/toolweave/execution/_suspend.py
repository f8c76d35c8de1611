"""SuspendPoint: a call that must ask, with nobody to answer, stops the batch to wait.

With ``AgentConfig(on_ask="suspend")`` a call whose permission decision is
*ask*, when there is no ask handler, does not run and is not denied: it is
*pending*. A pending call does not finish: it waits in its permission stage,
so the scheduler starts nothing that conflicts with it, exactly as if it were
a slow call, while every call that does not depend on it goes on (and may
become pending too). Once nothing of the run is in flight but pending calls
(every started call finished or is pending), the batch *suspends*: the
pending calls are released with a placeholder, and from then on no call
starts (each one the scheduler still starts is *held*, never run).

That is serial-equivalent by the scheduler's own rule: a call starts only
once every earlier call it conflicts with has finished; a pending call never
finished, so nothing after it that conflicts with it has run, and what did
run commutes with it. On resume the pending and held calls run in call order
with the person's decisions, after the ones that ran (docs/human-in-the-loop.md).
The counts come from the batch's listeners (`started`, `completed`).

A resumed run's point carries the decisions, by call key (`ToolCall.ref`):
the permission stage answers a decided call's ask with it instead of asking.

Loop affinity: the run's event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypeAlias, final

import anyio

from ..events import PendingApproval
from ..messages import ToolCall, ToolResult
from ..scheduling import InterruptToken

__all__ = ["Decision", "SuspendPoint"]

Decision: TypeAlias = Literal["allow", "deny", "always"]
"""A person's decision on a pending call: the ask handler's answers."""

_DECISIONS = ("allow", "deny", "always")


@final
class SuspendPoint:
    """One run's suspension state: what waits, what was held, and the decisions given.

    Args:
        enabled: Suspend a call that must ask with nobody to ask (else it is denied).
        decisions: The decisions of a resume, by call key.
        always: "always" approvals of the session so far, as ``(tool, subject)``.
    """

    def __init__(
        self,
        *,
        enabled: bool,
        decisions: Mapping[str, Decision] | None = None,
        always: tuple[tuple[str, str | None], ...] = (),
    ) -> None:
        for key, decision in (decisions or {}).items():
            if decision not in _DECISIONS:
                raise ValueError(
                    f"the decision for call {key} is {decision!r}; expected one of"
                    f" {', '.join(_DECISIONS)}"
                )
        self.enabled = enabled
        """Whether an unanswerable ask suspends the run."""
        self.always = always
        """The session's "always" approvals carried in from an earlier suspension."""
        self._decisions = dict(decisions or {})
        self._pending: dict[str, PendingApproval] = {}
        self._held: dict[str, None] = {}  # insertion-ordered set
        self._in_flight = 0  # started, not finished, not pending
        self._released = False
        self._quiet: anyio.Event | None = None

    @property
    def tripped(self) -> bool:
        """True once the batch suspended: no call starts any more."""
        return self._released

    @property
    def pending(self) -> tuple[PendingApproval, ...]:
        """What waits, in the order the calls reached the permission stage."""
        return tuple(self._pending.values())

    @property
    def held(self) -> tuple[str, ...]:
        """Keys of the calls held back without starting."""
        return tuple(self._held)

    def waits(self, call: ToolCall) -> bool:
        """True if `call` is pending or held: it has no result of its own yet."""
        ref = call.ref
        return ref in self._pending or ref in self._held

    def decision(self, call: ToolCall) -> Decision | None:
        """The decision given for `call` on resume (taken: it answers one ask only)."""
        return self._decisions.pop(call.ref, None)

    def started(self) -> None:
        """A call of the run started (its `on_started`)."""
        self._in_flight += 1

    def completed(self, call: ToolCall) -> None:
        """A call of the run has its result (its `on_completed`)."""
        if not self.waits(call):
            self._in_flight -= 1
            self._check()

    async def suspend(self, pending: PendingApproval) -> bool:
        """`pending`'s call waits until nothing but pending calls is in flight.

        A checkpoint. Returns True once the batch suspended (the call is then
        answered a placeholder), False if the wait was cancelled first (the
        run halted, the call was cancelled): the call is no longer pending
        and never started. Level-triggered: an outer cancel fires again at
        the caller's next checkpoint.
        """
        self._pending[pending.key] = pending
        self._in_flight -= 1
        self._check()
        if self._released:
            return True
        if self._quiet is None:
            self._quiet = anyio.Event()
        quiet = self._quiet
        try:
            await quiet.wait()
        except anyio.get_cancelled_exc_class():
            if not self._released:
                del self._pending[pending.key]
                self._in_flight += 1  # it is answered (not run) like any call
                return False
        return True

    async def wait(self, pending: PendingApproval, halt: InterruptToken | None) -> bool:
        """`suspend`, cut by the run's `halt` too (then False: the call never started)."""
        # `suspend` answers its own cancellation, so this scope never swallows
        # an exception: what it returns is the answer, a halt's cut included.
        with anyio.CancelScope() as waiting:
            unsubscribe = None if halt is None else halt.subscribe(waiting.cancel)
            try:
                suspended = await self.suspend(pending)
            finally:
                if unsubscribe is not None:
                    unsubscribe()
        return suspended

    def _check(self) -> None:
        if self._pending and not self._released and self._in_flight <= 0:
            self._released = True
            if self._quiet is not None:
                self._quiet.set()

    def hold(self, call: ToolCall) -> ToolResult:
        """Hold `call` back (it never started): a placeholder no transcript receives."""
        self._held[call.ref] = None
        return ToolResult(
            call.id,
            f"Not run yet: the run is suspended for a person's decision, so the"
            f" tool {call.name!r} was not started; it runs when the run is resumed.",
            is_error=True,
            synthetic=True,
        )
