"""Suspending a run for a person's decision, and resuming it with the decisions.

`Resumption` is what `Agent.resume` hands the loop: the `Suspension` and the
decisions, checked. `suspended_end` turns a batch that suspended into the
run's `Suspension` and its `Finish`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from .._exceptions import UsageError
from ..events import CompletionReason, PendingApproval
from ..execution import Decision, SuspendPoint
from ..messages import Message, ModelResponse, StopReason, ToolCall, ToolResult
from ..sessions import Suspension
from ._steps import Finish
from ._transcript import transcript_problems

__all__ = ["Resumption", "check_decisions", "resumption", "suspended_end"]

_DECISIONS = ("allow", "deny", "always")


@dataclass(frozen=True, slots=True)
class Resumption:
    """A suspended run to continue, with a decision for every call that waits."""

    suspension: Suspension
    """What the run left."""
    decisions: Mapping[str, Decision]
    """By call key: ``"allow"``, ``"deny"`` or ``"always"``."""

    @property
    def response(self) -> ModelResponse:
        """The suspended batch's response, rebuilt from its message (keys kept)."""
        message = self.suspension.messages[-1]
        content = message.content
        assert not isinstance(content, str)
        return ModelResponse(tuple(content), stop_reason=StopReason.TOOL_USE)  # type: ignore[arg-type]

    def prompt(self) -> str:
        """What the resumed run's `RunStarted` says: the decisions given."""
        said = ", ".join(f"{key} {d}" for key, d in self.decisions.items())
        return f"[toolweave] resumed with decisions: {said}"


def resumption(suspension: Suspension, decisions: Mapping[str, str]) -> Resumption:
    """Check `decisions` against `suspension`: one per waiting call, each a known answer.

    Raises:
        UsageError: a key that does not wait, a call left undecided, an unknown
            answer, or a transcript that cannot be continued.
    """
    keys = [p.key for p in suspension.pending]
    unknown = [k for k in decisions if k not in keys]
    if unknown:
        raise UsageError(
            f"no call waits under key(s) {', '.join(unknown)}; waiting:"
            f" {', '.join(keys) or '(none)'}"
        )
    undecided = [k for k in keys if k not in decisions]
    if undecided:
        raise UsageError(
            f"every waiting call needs a decision; undecided: {', '.join(undecided)}"
        )
    checked: dict[str, Decision] = {}
    for key in keys:
        answer = decisions[key]
        if answer in _DECISIONS:
            checked[key] = cast("Decision", answer)
        else:
            raise UsageError(
                f"the decision for call {key} is {answer!r}; expected one of"
                f" {', '.join(_DECISIONS)}"
            )
    messages = suspension.messages
    if not messages or not messages[-1].tool_calls:
        raise UsageError("the suspension's transcript does not end with its calls")
    problems = transcript_problems(messages[:-1])
    if problems:
        raise UsageError(
            "the suspension's transcript is not valid: " + "; ".join(problems)
        )
    return Resumption(suspension, checked)


def check_decisions(suspension: Suspension, decisions: Mapping[str, str]) -> None:
    """Raise `UsageError` unless `Agent.resume(suspension, decisions)` would accept them."""
    resumption(suspension, decisions)


def suspended_end(
    point: SuspendPoint,
    *,
    messages: tuple[Message, ...],
    calls: Sequence[ToolCall],
    results: Sequence[ToolResult],
    iteration: int,
    always: tuple[tuple[str, str | None], ...],
    signals: tuple[tuple[str, str, str], ...] = (),
) -> tuple[Suspension, Finish]:
    """The run's `Suspension` (the batch's results kept, what waits in call order) and its end."""
    by_key: dict[str, PendingApproval] = {p.key: p for p in point.pending}
    pending = tuple(by_key[c.ref] for c in calls if c.ref in by_key)
    done = {c.ref: r for c, r in zip(calls, results, strict=True) if not point.waits(c)}
    suspension = Suspension(
        messages=messages,
        pending=pending,
        done=done,
        iteration=iteration,
        always=always,
        signals=signals,
    )
    listed = "; ".join(f"{p.key} {p.tool} ({p.reason})" for p in pending)
    held = len(point.held)
    detail = f"waiting for a decision on {len(pending)} call(s): {listed}"
    if held:
        detail += f"; {held} later call(s) held, not started"
    return suspension, Finish(CompletionReason.SUSPENDED, detail=detail)
